"""Shared pytest set-up: nothing global beyond the package on sys.path."""
