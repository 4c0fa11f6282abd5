"""askgate Telegram worker."""
