"""The Jobs page, `nvq web`: a small web app in its own process that talks to the
daemon only through `nvq.AsyncClient`, behind a token (see `access`)."""
