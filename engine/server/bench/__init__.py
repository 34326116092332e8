"""`python -m engine serve --bench`: what serving over HTTP costs beside the engine in-process, and what
each API's translation, structured output and a warm session cost or save."""
