"""Checkpoints: finding, converting and reading the weights `tl.load` builds a model from.

Not the lesson: what a student needs is that `tl.load()` gives a model. The course engineer reads this package:

    loading.py    tl.load's plumbing: where the weights come from (the bundled GGUF, a folder, a Hub id), the device
                  and dtype, and the checks that name what is wrong with a damaged or foreign checkpoint
    convert.py    the bundled GGUF converted once to safetensors in the user's cache (later loads take under a second)
    manifest.py   each cache folder lists the files teachllm wrote, with their SHA-256: it deletes only those
"""
