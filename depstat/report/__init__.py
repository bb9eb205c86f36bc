"""Rendering one Analysis: the console (console), the HTML/Markdown report (document), the data card (card)."""
