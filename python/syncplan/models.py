"""The torch models the package's tools, tests and examples share: tiny-gpt (GPT-2's architecture at
toy size, data/models/tiny-gpt.json's model), and loading a user's MODULE:CLASS or FILE.py:CLASS.

Importing this module does not import torch: the classes are made by functions given the torch
module, so that the command lines can check their arguments on a Python without torch.
"""

import importlib
import importlib.util
import math

from ._cli import check_input_paths
from .errors import UsageError, printable

TINY_GPT = "tiny-gpt"
TINY_GPT_CONTEXT = 64  # tokens: the longest sequence tiny-gpt takes (its position table's rows)

def define_tiny_gpt(torch):
    """Returns the TinyGPT class (defined here so that importing this file does not need torch)."""
    nn = torch.nn
    functional = torch.nn.functional

    class Conv1D(nn.Module):
        """GPT-2's linear layer: weight stored (in, out), y = x W + b (as in Hugging Face's GPT-2)."""

        def __init__(self, in_features, out_features):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(in_features, out_features).normal_(std=0.02))
            self.bias = nn.Parameter(torch.zeros(out_features))

        def forward(self, x):
            shape = x.shape[:-1] + (self.weight.shape[1],)
            return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(shape)

    class Attention(nn.Module):
        def __init__(self, width, heads, context, dropout):
            super().__init__()
            self.heads = heads
            self.c_attn = Conv1D(width, 3 * width)
            self.c_proj = Conv1D(width, width)
            self.attn_dropout = nn.Dropout(dropout)
            self.resid_dropout = nn.Dropout(dropout)
            causal = torch.tril(torch.ones(context, context, dtype=torch.bool))
            self.register_buffer("causal", causal.view(1, 1, context, context), persistent=False)

        def forward(self, x):
            batch, seq, width = x.shape
            head_width = width // self.heads
            q, k, v = self.c_attn(x).split(width, dim=2)
            q, k, v = (t.view(batch, seq, self.heads, head_width).transpose(1, 2) for t in (q, k, v))
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_width)
            scores = scores.masked_fill(~self.causal[:, :, :seq, :seq], float("-inf"))
            weights = self.attn_dropout(functional.softmax(scores, dim=-1))
            merged = (weights @ v).transpose(1, 2).reshape(batch, seq, width)
            return self.resid_dropout(self.c_proj(merged))

    class MLP(nn.Module):
        def __init__(self, width, dropout):
            super().__init__()
            self.c_fc = Conv1D(width, 4 * width)
            self.c_proj = Conv1D(4 * width, width)
            self.act = nn.GELU(approximate="tanh")  # GPT-2's "gelu_new"
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.act(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, width, heads, context, dropout):
            super().__init__()
            self.ln_1 = nn.LayerNorm(width)
            self.attn = Attention(width, heads, context, dropout)
            self.ln_2 = nn.LayerNorm(width)
            self.mlp = MLP(width, dropout)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class Transformer(nn.Module):
        def __init__(self, vocab, context, width, blocks, heads, dropout):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.wpe = nn.Embedding(context, width)
            self.drop = nn.Dropout(dropout)
            self.h = nn.ModuleList(Block(width, heads, context, dropout) for _ in range(blocks))
            self.ln_f = nn.LayerNorm(width)

        def forward(self, tokens):
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            x = self.drop(self.wte(tokens) + self.wpe(positions))
            for block in self.h:
                x = block(x)
            return self.ln_f(x)

    class TinyGPT(nn.Module):
        """GPT-2 small's architecture at toy size (data/models/tiny-gpt.json describes the same model).

        Parameters, by hand (width 128, vocabulary 256, context 64, 4 blocks):
          wte 256*128 = 32,768; wpe 64*128 = 8,192; per block: ln_1 2*128 = 256,
          c_attn 128*384+384 = 49,536, c_proj 128*128+128 = 16,512, ln_2 256,
          mlp.c_fc 128*512+512 = 66,048, mlp.c_proj 512*128+128 = 65,664 -> 198,272;
          4 blocks 793,088; ln_f 256; lm_head 0 of its own (tied to wte).
          Total 32,768 + 8,192 + 793,088 + 256 = 834,304.
        """

        # Dropout 0 as in data/models/tiny-gpt.json (deterministic runs); the Dropout modules stay.
        vocab, context, width, blocks, heads, dropout = 256, TINY_GPT_CONTEXT, 128, 4, 4, 0.0

        def __init__(self):
            super().__init__()
            self.transformer = Transformer(self.vocab, self.context, self.width, self.blocks,
                                           self.heads, self.dropout)
            self.lm_head = nn.Linear(self.width, self.vocab, bias=False)
            self.lm_head.weight = self.transformer.wte.weight  # tied, as in GPT-2

        def forward(self, tokens):
            return self.lm_head(self.transformer(tokens))

        def example_inputs(self, batch, seq):
            if seq > self.context:
                raise UsageError(f"--seq: at most tiny-gpt's context {self.context}, got {seq}")
            return (torch.randint(0, self.vocab, (batch, seq)),)

        def example_loss(self, logits, inputs):
            # Next-byte prediction, Hugging Face's convention: labels are the inputs, shifted inside.
            tokens = inputs[0]
            return functional.cross_entropy(logits[:, :-1].reshape(-1, self.vocab),
                                            tokens[:, 1:].reshape(-1))

    return TinyGPT


def check_model_argument(spec):
    """The command-line check of --model SPEC before torch or any rank starts: UsageError naming
    --model unless SPEC is tiny-gpt, MODULE:CLASS or FILE.py:CLASS with FILE.py a regular file."""
    if spec == TINY_GPT:
        return
    location, _, class_name = spec.rpartition(":")
    if not location or not class_name:
        raise UsageError(f"--model {printable(spec)}: expected tiny-gpt, MODULE:CLASS or FILE.py:CLASS")
    if location.endswith(".py"):
        check_input_paths([(f"--model {printable(spec)}", location)])


def load_model_class(torch, spec):
    """(class, default model name) for --model SPEC: tiny-gpt, MODULE:CLASS or FILE.py:CLASS (the
    syntax checked by check_model_argument); UsageError naming SPEC when it cannot be imported or
    lacks example_inputs/example_loss."""
    if spec == TINY_GPT:
        return define_tiny_gpt(torch), TINY_GPT
    check_model_argument(spec)
    location, class_name = spec.rsplit(":", 1)
    try:
        if location.endswith(".py"):
            module_spec = importlib.util.spec_from_file_location("syncplan_user_model", location)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(location)
    except Exception as error:  # the user's module failed to import: their input
        raise UsageError(f"--model {printable(spec)}: cannot import {printable(location)} "
                         f"({type(error).__name__}: {printable(error)})")
    model_class = getattr(module, class_name, None)
    if model_class is None:
        raise UsageError(f"--model {printable(spec)}: {printable(location)} has no class {printable(class_name)}")
    for method in ("example_inputs", "example_loss"):
        if not callable(getattr(model_class, method, None)):
            raise UsageError(f"--model {printable(spec)}: class {printable(class_name)} has no method {method} "
                             "(see the script's docstring)")
    return model_class, class_name


def tiny_gpt(seed=None):
    """A fresh tiny-gpt (torch.nn.Module; 834,304 parameters, forward(tokens [batch, seq] int64) ->
    logits [batch, seq, 256]); `seed`: torch.manual_seed before the parameters are drawn."""
    import torch
    if seed is not None:
        torch.manual_seed(seed)
    return define_tiny_gpt(torch)()
