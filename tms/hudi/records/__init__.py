"""Records: schemas and their evolution, base file formats, bloom filters, merging file slices, reading a table."""
