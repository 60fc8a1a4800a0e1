"""Real users' code: training steps — compiled optimizers with LR schedulers, compiled train
steps, transformers models fine-tuned from tiny configs — as posted in pytorch/pytorch
issues and the PyTorch recipes users copy (each case names its source).

CPU, ``backend="eager"``; models shrunk (the issues' 784x500 MLPs become 16x8), steps
fewer (the issues' 10000 become 4-6). None comes from PyTorch's test suite.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

from . import _tiny, case

I = "https://github.com/pytorch/pytorch/issues/"


@case(I + "107076")
def adamw_with_lr_scheduler():
    class SimpleModel(nn.Module):
        def __init__(self, input_size, hidden_size, num_classes):
            super(SimpleModel, self).__init__()
            self.fc1 = nn.Linear(input_size, hidden_size)
            self.fc2 = nn.Linear(hidden_size, num_classes)

        def forward(self, x):
            x = torch.relu(self.fc1(x))
            x = self.fc2(x)
            return x

    input_size = 16
    hidden_size = 8
    num_classes = 4
    model = SimpleModel(input_size, hidden_size, num_classes)
    optimizer = optim.AdamW(model.parameters(), lr=0.01)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    x = torch.randn(8, input_size)
    y = torch.randint(0, num_classes, (8,))

    def train_step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    def one(opt_step):
        train_step_loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        train_step_loss.backward()
        opt_step()
        scheduler.step()
        return [p.detach().clone() for p in model.parameters()]

    return optimizer.step, [one, one, one]


@case("https://github.com/pytorch/tutorials/pull/2874 (compiling_optimizer_lr_scheduler: lr not a tensor)")
def linear_lr_float_lr():
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8, bias=False) for _ in range(2)])
    input = torch.rand(4, 8)
    output = model(input)
    output.sum().backward()

    # No longer wrap the LR in a tensor here
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

    def fn():
        opt.step()
        sched.step()

    def call(f):
        f()
        return [p.detach().clone() for p in model.parameters()]

    return fn, [call] * 5


@case(I + "130467 (tensor lr, a scheduler: recompiles on the second step)")
def tensor_lr_scheduler_second_step():
    model = torch.nn.Linear(8, 2)
    model(torch.randn(4, 8)).sum().backward()
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
    sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

    def fn():
        opt.step()
        sched.step()

    def call(f):
        f()
        return [p.detach().clone() for p in model.parameters()]

    return fn, [call] * 3


@case(I + "163093")
def reduce_lr_on_plateau_tensor_lr():
    model = nn.Linear(1, 1)
    lr = torch.tensor(0.1)
    opt = optim.Adam(model.parameters(), lr=lr)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1, min_lr=0.001)
    model(torch.ones(1, 1)).sum().backward()

    # From https://docs.pytorch.org/tutorials/recipes/compiling_optimizer_lr_scheduler.html
    def fn(metric):
        opt.step()
        scheduler.step(metric)

    total_steps = 8
    fake_metrics = torch.linspace(1.0, 0.0, total_steps)
    fake_metrics[3:6] = fake_metrics[3]

    def call(metric):
        def run(f):
            f(metric)
            return [p.detach().clone() for p in model.parameters()]
        return run

    return fn, [call(metric) for metric in fake_metrics]


@case(I + "133898")
def adamw_one_cycle_betas():
    param = torch.rand(2, 3, dtype=torch.float, requires_grad=True)
    param.grad = torch.rand_like(param)

    lr = torch.tensor(0.001)
    total_steps = 6
    optimizer = torch.optim.AdamW([param], lr=lr)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=total_steps)

    def step():
        optimizer.step()
        scheduler.step()

    def call(f):
        f()
        return param.detach().clone()

    return step, [call] * 4


@case(I + "120934 (LambdaLR with a float schedule)")
def lambda_lr_float():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def lr_scheduling_func(iter):
        return min(1.0, (iter + 1) / 4)

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_scheduling_func)
    x = torch.randn(4, 8)
    y = torch.randint(0, 2, (4,))

    def train_step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    def call(f):
        loss = f(x, y)
        scheduler.step()
        return loss.detach()

    return train_step, [call] * 4


@case("https://pytorch.org/tutorials/intermediate/torch_compile_tutorial.html (a whole train step compiled)")
def whole_train_step():
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def train(mod, data):
        opt.zero_grad(True)
        pred = mod(data[0])
        loss = torch.nn.CrossEntropyLoss()(pred, data[1])
        loss.backward()
        opt.step()

    data = (torch.randn(8, 16), torch.randint(0, 4, (8,)))

    def call(f):
        f(model, data)
        return [p.detach().clone() for p in model.parameters()]

    return train, [call, call]


@case("https://huggingface.co/docs/transformers/training (a training loop: AdamW, linear warmup, batches of varying length)")
def gpt2_finetune_loop():
    from transformers import get_linear_schedule_with_warmup

    model = _tiny.gpt2()
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=4)
    batches = [_tiny.ids(2, n) for n in (8, 12, 10)]

    def step(batch):
        def run(compiled_model):
            outputs = compiled_model(input_ids=batch, labels=batch)
            loss = outputs.loss
            loss.backward()
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
            return loss.detach()
        return run

    return model, [step(b) for b in batches]


@case("https://huggingface.co/docs/transformers/training (the last batch of an epoch is smaller)")
def bert_last_batch_smaller():
    model = _tiny.bert()
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)

    def step(n):
        input_ids = _tiny.ids(n, 12)
        labels = torch.randint(0, 2, (n,))

        def run(compiled_model):
            outputs = compiled_model(input_ids=input_ids, labels=labels)
            outputs.loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            return outputs.loss.detach()
        return run

    return model, [step(8), step(8), step(3)]


@case("https://huggingface.co/docs/transformers/training (evaluate after each epoch: model.eval(), then model.train())")
def gpt2_train_then_eval():
    model = _tiny.gpt2()
    batch = _tiny.ids(2, 8)

    def train_step(m):
        model.train()
        out = m(input_ids=batch, labels=batch)
        out.loss.backward()
        return out.loss.detach()

    def evaluate(m):
        model.eval()
        with torch.no_grad():
            return m(input_ids=batch, labels=batch).loss

    return model, [train_step, evaluate]


@case("https://discuss.pytorch.org/t/gradient-accumulation-with-torch-compile (accumulation step count passed in)")
def gradient_accumulation_counter():
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    accum = 2

    def train_step(x, y, step):
        loss = F.mse_loss(model(x), y) / accum
        loss.backward()
        if (step + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
        return loss

    data = [(torch.randn(4, 8), torch.randn(4, 2), s) for s in range(4)]

    def call(x, y, s):
        def run(f):
            return f(x, y, s).detach()
        return run

    return train_step, [call(*d) for d in data]


@case("https://pytorch.org/docs/stable/amp.html (autocast on for training, off for evaluation)")
def autocast_toggled():
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    x = torch.randn(4, 16)

    def with_amp(m):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return m(x).float()

    def without(m):
        return m(x)

    return model, [with_amp, without]


@case("https://pytorch.org/docs/stable/notes/autograd.html (inference under no_grad, then a training call)")
def no_grad_then_grad():
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    x = torch.randn(4, 16)

    def infer(m):
        with torch.no_grad():
            return m(x)

    def train(m):
        out = m(x)
        out.sum().backward()
        return out.detach()

    return model, [infer, train]


@case(I + "139476 (freezing a layer: requires_grad set False on its parameters between steps)")
def freeze_layer_between_steps():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(4, 8)

    def step(m):
        out = m(x)
        out.sum().backward()
        return out.detach()

    def frozen(m):
        for p in model[0].parameters():
            p.requires_grad_(False)
        return step(m)

    return model, [step, frozen]


@case("https://huggingface.co/docs/transformers/perf_train_cpu (gradient checkpointing on a compiled model)")
def llama_gradient_checkpointing():
    model = _tiny.llama(layers=2)
    model.gradient_checkpointing_enable()
    model.train()
    batch = _tiny.ids(2, 8)

    def step(m):
        out = m(input_ids=batch, labels=batch)
        out.loss.backward()
        return out.loss.detach()

    return model, [step]
