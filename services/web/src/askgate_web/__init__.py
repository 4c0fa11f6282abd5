"""askgate web Control UI: a page per session with the docked question panel."""
