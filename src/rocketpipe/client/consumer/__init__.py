"""Push consumer internals (L3)."""
