"""askgate Slack worker."""
