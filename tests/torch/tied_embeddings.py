"""A model for tools/torch_profile.py's MODULE:CLASS path (tests/torch): two embedding modules sharing one weight.

The decoder's embedding is a module object of its own whose weight is the encoder's: on token ids it
has neither inputs nor parameters of its own that need gradients, only the shared one.
"""

import torch
from torch import nn


class TiedEmbeddings(nn.Module):
    """Parameters by hand: enc 50*16 = 800 (dec shares them: 0 of its own, tied to enc);
    mix 16*16+16 = 272. Total 1,072."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Embedding(50, 16)
        self.dec = nn.Embedding(50, 16)
        self.dec.weight = self.enc.weight
        self.mix = nn.Linear(16, 16)

    def forward(self, source, target):
        return self.mix(self.enc(source) + self.dec(target))

    def example_inputs(self, batch, seq):
        return (torch.randint(0, 50, (batch, seq)), torch.randint(0, 50, (batch, seq)))

    def example_loss(self, output, inputs):
        return output.pow(2).mean()
