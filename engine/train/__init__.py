"""Training the bundled target and DFlash drafter (`specengine train ...`).

cli.py      the `specengine train` parser and entry point
bundled.py  the bundled pair's shapes
corpus.py   training and benchmark text from local files
loop.py     the shared optimise loop (cosine lr, clipping, resumable checkpoints)
target.py   target LM training
drafter.py  DFlash drafter training (data regeneration, target features, loss)
"""
