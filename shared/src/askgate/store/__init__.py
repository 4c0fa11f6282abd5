"""Everything that touches Redis: every key (keys), every Lua script (scripts,
followup_scripts), every hash field (record). Services call these modules' methods; they
never build a key or read a field themselves."""
