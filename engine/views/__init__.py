"""Views: what the app and the reports show of a run, computed from its events (pure data)."""
