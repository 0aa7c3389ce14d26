"""Scripts for the project's maintainers; not part of the installed packages."""
