"""The web dashboard under /ui/: server-rendered pages (Jinja2 templates, SVG charts drawn on the server, a
small script of the service's own that refreshes pages and confirms actions). Everything it shows is read
through the repositories and functions the HTTP API uses."""
