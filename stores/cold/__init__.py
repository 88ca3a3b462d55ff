"""Cold storage (local files, S3) and the archive of a memory's evidence."""
