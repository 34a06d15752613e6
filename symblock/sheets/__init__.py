"""Sheets: the worksheet model built from a trace, and thin writers (templates) for each format."""
