"""A model for tools/torch_profile.py's frozen layers (tests/torch): a frozen embedding, as in fine-tuning with fixed token vectors.

Layers in forward order: `embed` (all parameters requires_grad False: frozen), `adapter` (weight
frozen, bias trainable: a mixed layer, not frozen, counted by its trainable bias only), `head`
(trainable).
"""

import torch
from torch import nn


class FrozenEmbedding(nn.Module):
    """Parameters by hand: embed 40*8 = 320 (frozen); adapter weight 8*8 = 64 frozen + bias 8
    trainable; head 8*4+4 = 36 trainable."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(40, 8)
        self.embed.weight.requires_grad_(False)
        self.adapter = nn.Linear(8, 8)
        self.adapter.weight.requires_grad_(False)
        self.head = nn.Linear(8, 4)

    def forward(self, tokens):
        return self.head(torch.relu(self.adapter(self.embed(tokens))))

    def example_inputs(self, batch, seq):
        return (torch.randint(0, 40, (batch, seq)),)

    def example_loss(self, output, inputs):
        return output.pow(2).mean()
