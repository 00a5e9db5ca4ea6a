"""A job's world: the snapshot of its code, the blob store that holds it on the queue
host, and the environment captured from the submitting shell."""
