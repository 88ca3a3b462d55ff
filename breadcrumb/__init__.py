"""breadcrumb package."""
