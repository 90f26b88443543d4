"""Reusable Streamlit render functions (render only: every number comes from the engine)."""
