#!/usr/bin/env python3
"""Write a synthetic per-layer cost table resembling LLaMA-2-7B on H100.

Assumptions (see ../README.md): sequence 4096, microbatch 1, BF16 on an
H100 SXM (989 TFLOP/s dense) at 50% MFU; matmul FLOPs 2 * params * tokens
forward; causal attention 2 * s^2 * h forward; backward = input gradient
(matmul 2*params*tokens + attention 2x forward) and weight gradient
(2*params*tokens); activations 34 * s * h bytes per layer (Korthikanti et
al. 2022, flash attention: no s^2 term); weights 16 B/param (BF16 weights
and grads, FP32 master weights and two Adam moments); gradients 2 B/param
(the BF16 gradient a data-parallel or Chimera all-reduce moves); boundary
s * h * 2.
Embedding (lookup, free) on layer 0, LM head + loss on layer 31.
"""
import json, sys

h, ffn, layers, vocab, s, b = 4096, 11008, 32, 32000, 4096, 1
rate = 989e12 * 0.5
tokens = s * b
layer_params = 4 * h * h + 3 * h * ffn + 2 * h
head_params = vocab * h
mm = 2 * layer_params * tokens
attn = 2 * s * s * h * b
stages = []
for i in range(layers):
    f, bi, bw = mm + attn, mm + 2 * attn, mm
    act = 34 * s * b * h
    params = layer_params
    if i == 0:
        params += head_params          # embedding table
    if i == layers - 1:
        hm = 2 * head_params * tokens  # LM head matmul
        f, bi, bw = f + hm, bi + hm, bw + hm
        act += s * b * vocab * 6       # BF16 logits + FP32 softmax
        params += head_params          # untied LM head
    stages.append({"forward_s": f / rate, "backward_input_s": bi / rate,
                   "backward_weight_s": bw / rate, "activation_bytes": act,
                   "weight_bytes": 16 * params, "gradient_bytes": 2 * params,
                   "boundary_bytes": 2 * s * b * h})
json.dump({"name": "llama2-7b-synthetic (32 layers, s=4096, mb=1, H100 50% MFU)",
           "stages": stages}, sys.stdout, indent=1)
print()
