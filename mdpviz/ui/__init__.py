"""Streamlit glue for the dashboard: page state and URLs, cached edges, controls from schemas, maps and charts.

This is the only package under ``mdpviz/`` that imports streamlit.
"""
