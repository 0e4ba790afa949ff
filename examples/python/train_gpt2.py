"""Train a transformers GPT-2 pipelined on 2 ranks with pipeopt (20 AdamW steps).

    PYTHONPATH=build/python python3 examples/python/train_gpt2.py [trained.pt]
    PYTHONPATH=build/python mpirun -np 2 python3 examples/python/train_gpt2.py [trained.pt]

Needs torch, torch-mlir and transformers (pip). With a file name, the losses
and the trained state_dict are saved there for compare_with_torch.py.
docs/Python.md explains the API.
"""
# Model and data (not counted in the 15 lines): a 4-layer GPT-2, random
# weights, 8 sequences of 32 tokens; the targets are the next tokens.
import sys
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=128, n_head=4, vocab_size=512, n_positions=64,
                                   bos_token_id=0, eos_token_id=0))
ids = torch.randint(0, 512, (8, 33))
inputs, targets = ids[:, :-1], ids[:, 1:]

# The training (imports included: 14 lines with the three above).
import pipeopt.torch

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
pipe = pipeopt.torch.pipeline(model, inputs, "cross_entropy", num_stages=2, num_microbatches=4, optimizer=optimizer)
losses = []
for step in range(20):
    losses.append(pipe.step(inputs, targets))
    if pipe.is_root:
        print(f"step {step + 1}: loss {losses[-1].item():.6f}")
state = pipe.state_dict()  # the trained weights, keyed like model.state_dict()
if pipe.is_root and len(sys.argv) > 1:
    torch.save({"losses": torch.stack(losses), "state_dict": state}, sys.argv[1])
