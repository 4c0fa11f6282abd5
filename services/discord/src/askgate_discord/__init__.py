"""askgate Discord worker."""
