"""How many examples each property test tries: 100 in `make test`, 1,000 in `make chaos`
(ASKGATE_PROPERTY_EXAMPLES). Hypothesis draws new ones on every run."""

from __future__ import annotations

import os

from hypothesis import settings

EXAMPLES = int(os.environ.get("ASKGATE_PROPERTY_EXAMPLES", "100"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None)
