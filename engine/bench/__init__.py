"""The engine's benchmarks: `python -m engine bench` and the figures behind it.

Every figure is printed beside its baseline taken in the same run (the plain library, a dense
bfloat16 engine, a quiet machine), never asserted: these machines are shared and noisy.

`command` parses nothing itself (engine/__main__.py does) and runs the figures asked for; `measure`
times one loaded engine; `library` is the plain library's loop on the same work; `llamacpp`, `bf16`,
`context` and `contended` are the figures of one question each. The benches run in the calling
(main) thread and reach the model only through `Engine` and `Session`, whose work runs on the
engine's own thread. The server's and the remote engine's benches stay in their rooms
(engine/server/bench/, engine/remote/bench.py), beside what they measure.
"""
