"""What the profiler and the executor both need of a model's layers: who owns a shared Parameter,
and a hook that fires once a parameter's gradient is accumulated."""

from .errors import quoted


def assign_owners(layers, error):
    """Gives each Parameter to the first layer holding it (layers in forward order, each with
    `name`, `module`, an empty `params` list and `tied_to` None); the others get `tied_to` = its
    owner's name (SPEC section 3's tied_to). Raises `error` (an exception class) when a module
    shares parameters with two different owners: a profile layer has one tied_to."""
    owner_of = {}
    for layer in layers:
        for parameter in layer.module.parameters(recurse=False):
            owner = owner_of.setdefault(id(parameter), layer)
            if owner is layer:
                layer.params.append(parameter)
            elif layer.tied_to not in (None, owner.name):
                raise error(f"module {quoted(layer.name)} shares parameters with {quoted(layer.tied_to)} and "
                            f"{quoted(owner.name)}; a profile layer has one tied_to")
            else:
                layer.tied_to = owner.name


def on_gradient_accumulated(torch, parameter, callback):
    """Calls callback() each time backward has accumulated `parameter`'s gradient into .grad.
    Returns (handle with remove(), object to keep alive): torch >= 2.1's
    register_post_accumulate_grad_hook, else (torch 1.13) a post-hook of the parameter's
    AccumulateGrad node, the hook DDP and Horovod use, whose node must be kept referenced or the
    hook goes with it."""
    if hasattr(parameter, "register_post_accumulate_grad_hook"):
        return parameter.register_post_accumulate_grad_hook(lambda p: callback()), None
    with torch.enable_grad():
        accumulator = parameter.expand_as(parameter).grad_fn.next_functions[0][0]
    return accumulator.register_hook(lambda grad_inputs, grad_outputs: callback()), accumulator
