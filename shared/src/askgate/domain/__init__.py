"""The contract and its rules, with no I/O: the ask and answer models, the reply parser,
the statuses, the locales, the event types on the streams, signing, URL policy."""
