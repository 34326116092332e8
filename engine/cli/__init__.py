"""The engine's command lines beside `python -m engine` itself (engine/__main__.py parses them all).

- `chat`: an interactive terminal chat on one session.
- `pull`: download a model from Hugging Face with a progress bar.

They run in the main thread and reach the model only through `Engine` and `Session`, like the app.
`serve` lives with the server (engine/server/cli.py) and `bench` with the benches (engine/bench/).
"""
