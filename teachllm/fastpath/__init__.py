"""The fast paths: the same forward pass as model.py, computed with fewer operations or cheaper weights.

Not the lesson. A student reads model.py, cache.py and generate.py; this package is what `tl.load(weights="gguf")`
switches on, and what chapter 10 measures and explains (its section on 4-bit weights and the kernels):

    quant.py      the GGUF's 4-bit and 8-bit blocks as PyTorch layers (Q4_1, Q8_0), multiplied where they lie
    kernels.py    which kernel multiplies each group of matrices on this CPU, chosen by timing them once
    native.py     builds and loads teachllm's C kernels (csrc/: AVX2 and AVX-512 integer dot products, attention)
    fused.py      the forward pass in fewer operations: stacked q/k/v and gate/up, fused RMSNorm, one C call for
                  a decode step's attention
    fused_float.py  the same fusions for model.py's float weights on any device (stacked in place, a RoPE table
                  read at the cache's device positions): the step the GPU fast path decodes with
    llamacpp.py   llama.cpp's speed on the same file, for the bench, when it is installed
    static_cache.py  the KV cache with fixed shapes (the whole buffer each step, its length a device tensor), for
                  the GPU: what lets a decode step be recorded once as a CUDA graph and replayed
    graph.py      a decode step with no host synchronisation (argmax on the device), and the same step as a CUDA
                  graph per batch size (1 to 32, a batch padded to the next); the eager step where CUDA is absent
    loop.py       lm.generate / lm.stream on the fast path (the default on CUDA): the static cache, the graphs,
                  sampling on the device, ids read back every few steps and the stop rules applied then

Every path here is checked against the plain one: the same logits to float rounding (tests/test_fast.py,
tests/test_kernels.py, tests/test_native.py, tests/test_quant.py, tests/test_static_cache.py,
tests/test_fused_float.py).
"""
