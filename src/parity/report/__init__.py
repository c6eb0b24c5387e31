"""Rendering for humans: terminal tables, markdown, plots, HTML. Never measures; takes records."""
