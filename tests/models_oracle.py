#!/usr/bin/env python3
"""PyTorch oracle for the example models (examples/*.c).

    python3 tests/models_oracle.py BUILD_DIR

For each architecture it builds a tiny model in PyTorch with random weights
(random batch-norm statistics too) in the layout the real checkpoints use,
saves its state_dict as safetensors (tests/safetensors_oracle.py's writer),
runs the C example on the same input eagerly and compiled (the example
prints both logit rows with --dump), and compares them with the model run
in float64.  BUILD_DIR holds the example binaries (tests/models_oracle.sh
builds them).  The last line is "N passed, N failed, N skipped".
"""
import os
import struct
import subprocess
import sys
import tempfile

SKIP = "SKIP models oracle: python3-torch not installed (apt-get install python3-torch)"
try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print(SKIP)
    print("0 passed, 0 failed, 1 skipped")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_oracle import save_file  # noqa: E402


# ---- torchvision's ResNet, module for module (torchvision is not required) ----

class Basic(nn.Module):
    expansion = 1

    def __init__(self, inp, planes, stride, down):
        super().__init__()
        self.conv1 = nn.Conv2d(inp, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = down

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))) + idt)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inp, planes, stride, down):
        super().__init__()
        self.conv1 = nn.Conv2d(inp, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = down

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        return F.relu(self.bn3(self.conv3(h)) + idt)


class ResNet(nn.Module):
    def __init__(self, block, layers, width, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        inp = width
        for i, n in enumerate(layers):
            planes, blocks = width << i, []
            for j in range(n):
                stride = 2 if j == 0 and i > 0 else 1
                down = None
                if stride != 1 or inp != planes * block.expansion:
                    down = nn.Sequential(nn.Conv2d(inp, planes * block.expansion, 1, stride, bias=False),
                                         nn.BatchNorm2d(planes * block.expansion))
                blocks.append(block(inp, planes, stride, down))
                inp = planes * block.expansion
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*blocks))
        self.fc = nn.Linear(inp, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        for i in range(4):
            x = getattr(self, "layer%d" % (i + 1))(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def randomize_bn(model, gen):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.weight.data = 1 + 0.2 * torch.rand(c, generator=gen) - 0.1
            m.bias.data = 0.1 * torch.randn(c, generator=gen)
            m.running_mean = 0.1 * torch.randn(c, generator=gen)
            m.running_var = 0.5 + torch.rand(c, generator=gen)


def write_ppm(path, img):
    h, w, _ = img.shape
    with open(path, "wb") as f:
        f.write(b"P6 %d %d 255\n" % (w, h) + img.tobytes())


def image_input(img):
    mean = torch.tensor([0.485, 0.456, 0.406], dtype=torch.float64).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], dtype=torch.float64).view(3, 1, 1)
    x = torch.from_numpy(img.astype(np.float64) / 255.0).permute(2, 0, 1)
    return ((x - mean) / std).unsqueeze(0)


def compare(name, want, dump, tol):
    rows = [np.array([float(v) for v in line.split()]) for line in open(dump)]
    ok = len(rows) == 2
    for label, got in zip(("eager", "compiled"), rows):
        err = np.max(np.abs(got - want)) if got.shape == want.shape else float("inf")
        scale = np.max(np.abs(want))
        rel = err / scale
        good = rel <= tol
        ok = ok and good
        print("%-4s %s %s: max abs err %.3g, max rel err %.3g (of max |logit| %.3g), tolerance %.0e" %
              ("ok" if good else "FAIL", name, label, err, rel, scale, tol))
    return ok


def resnet_cases(build, tmp, gen):
    cases = [("resnet18-like", Basic, [2, 2, 2, 2], 8, 10, 64), ("resnet50-like", Bottleneck, [3, 4, 6, 3], 8, 7, 64),
             ("resnet34-like, 40px", Basic, [3, 4, 6, 3], 4, 5, 40)]
    for name, block, layers, width, classes, size in cases:
        model = ResNet(block, layers, width, classes)
        randomize_bn(model, gen)
        model.eval()
        sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
        ck = os.path.join(tmp, "resnet.safetensors")
        save_file(ck, sd)
        img = (torch.rand(size, size, 3, generator=gen) * 255).to(torch.uint8).numpy()
        ppm = os.path.join(tmp, "img.ppm")
        write_ppm(ppm, img)
        with torch.no_grad():
            want = model.double()(image_input(img))[0].numpy()
        dump = os.path.join(tmp, "logits.txt")
        r = subprocess.run([os.path.join(build, "resnet"), "--weights", ck, "--image", ppm, "--size", str(size),
                            "--runs", "1", "--dump", dump], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s: the example exited %d: %s" % (name, r.returncode, (r.stderr or r.stdout)[-400:]))
            yield False
            continue
        yield compare(name, want, dump, 1e-4)


# ---- GPT-2 in Hugging Face's layout (Conv1D weights are [in, out]) ----

def gpt2_random(gen, n_layer, d, vocab, n_ctx, prefix, extras):
    r = lambda *shape, std=0.02: (torch.randn(*shape, generator=gen, dtype=torch.float64) * std)
    sd = {"wte.weight": r(vocab, d, std=0.5), "wpe.weight": r(n_ctx, d, std=0.1)}
    for i in range(n_layer):
        p = "h.%d." % i
        sd[p + "ln_1.weight"] = 1 + r(d, std=0.1)
        sd[p + "ln_1.bias"] = r(d, std=0.1)
        sd[p + "attn.c_attn.weight"] = r(d, 3 * d, std=0.2)
        sd[p + "attn.c_attn.bias"] = r(3 * d, std=0.1)
        sd[p + "attn.c_proj.weight"] = r(d, d, std=0.2)
        sd[p + "attn.c_proj.bias"] = r(d, std=0.1)
        sd[p + "ln_2.weight"] = 1 + r(d, std=0.1)
        sd[p + "ln_2.bias"] = r(d, std=0.1)
        sd[p + "mlp.c_fc.weight"] = r(d, 4 * d, std=0.2)
        sd[p + "mlp.c_fc.bias"] = r(4 * d, std=0.1)
        sd[p + "mlp.c_proj.weight"] = r(4 * d, d, std=0.1)
        sd[p + "mlp.c_proj.bias"] = r(d, std=0.1)
        if extras:  # buffers some checkpoints carry; the example ignores them
            sd[p + "attn.bias"] = torch.tril(torch.ones(n_ctx, n_ctx)).view(1, 1, n_ctx, n_ctx)
    sd["ln_f.weight"] = 1 + r(d, std=0.1)
    sd["ln_f.bias"] = r(d, std=0.1)
    return {prefix + k: v for k, v in sd.items()}


def gpt2_logits(sd, prefix, n_layer, n_head, ids):
    g = lambda k: sd[prefix + k]
    T, d = len(ids), g("wte.weight").shape[1]
    hd = d // n_head
    x = g("wte.weight")[ids] + g("wpe.weight")[torch.arange(T)]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for i in range(n_layer):
        p = "h.%d." % i
        h = F.layer_norm(x, (d,), g(p + "ln_1.weight"), g(p + "ln_1.bias"), 1e-5)
        q, k, v = (h @ g(p + "attn.c_attn.weight") + g(p + "attn.c_attn.bias")).split(d, dim=1)
        q, k, v = (t.view(T, n_head, hd).transpose(0, 1) for t in (q, k, v))
        a = torch.softmax(q @ k.transpose(1, 2) / hd ** 0.5 + mask, dim=-1) @ v
        x = x + a.transpose(0, 1).reshape(T, d) @ g(p + "attn.c_proj.weight") + g(p + "attn.c_proj.bias")
        h = F.layer_norm(x, (d,), g(p + "ln_2.weight"), g(p + "ln_2.bias"), 1e-5)
        h = F.gelu(h @ g(p + "mlp.c_fc.weight") + g(p + "mlp.c_fc.bias"), approximate="tanh")
        x = x + h @ g(p + "mlp.c_proj.weight") + g(p + "mlp.c_proj.bias")
    x = F.layer_norm(x[-1], (d,), g("ln_f.weight"), g("ln_f.bias"), 1e-5)
    return x @ g("wte.weight").T


def gpt2_cases(build, tmp, gen):
    cases = [("gpt2 (transformer. prefix, config.json)", 3, 128, 4, 97, 64, "transformer.", True),
             ("gpt2 (bare names, n_head = d / 64)", 2, 128, 2, 61, 40, "", False)]
    for name, n_layer, d, n_head, vocab, n_ctx, prefix, extras in cases:
        sd = gpt2_random(gen, n_layer, d, vocab, n_ctx, prefix, extras)
        mdir = os.path.join(tmp, "gpt2-%d" % n_layer)
        os.makedirs(mdir, exist_ok=True)
        save_file(os.path.join(mdir, "model.safetensors"), {k: v.float().numpy() for k, v in sd.items()})
        if prefix:
            with open(os.path.join(mdir, "config.json"), "w") as f:
                f.write('{"model_type": "gpt2", "n_embd": %d, "n_head": %d, "n_layer": %d}' % (d, n_head, n_layer))
        # the byte-level alphabet: "\u0120" is a space before a word
        with open(os.path.join(mdir, "vocab.json"), "w") as f:
            f.write('{"Hello": 0, "\\u0120world": 1, "!": 2' + "".join(', "t%d": %d' % (i, i) for i in range(3, vocab)) + "}")
        sd32 = {k: v.float().double() for k, v in sd.items()}  # what the file holds
        prompt = [0, 1, 2, 5, 7]
        ntok = 12
        with torch.no_grad():
            want = gpt2_logits(sd32, prefix, n_layer, n_head, prompt).numpy()
            ids, gaps = list(prompt), []
            for _ in range(ntok):
                lg = gpt2_logits(sd32, prefix, n_layer, n_head, ids)
                top2 = torch.topk(lg, 2).values
                gaps.append(float(top2[0] - top2[1]))
                ids.append(int(torch.argmax(lg)))
        dump = os.path.join(tmp, "gpt2.txt")
        r = subprocess.run([os.path.join(build, "gpt2"), "--model", mdir, "--prompt", " ".join(map(str, prompt)),
                            "--tokens", str(ntok), "--dump", dump], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s: the example exited %d: %s" % (name, r.returncode, (r.stderr or r.stdout)[-400:]))
            yield False
            continue
        lines = open(dump).read().split("\n")
        with open(dump, "w") as f:
            f.write(lines[0] + "\n" + lines[1] + "\n")
        ok = compare(name + ", prompt logits", want, dump, 1e-4)
        got = [int(t) for t in lines[2].split()]
        # greedy ids must agree wherever the reference's top two are not a near tie
        bad = [i for i, (a, b) in enumerate(zip(got, ids[len(prompt):])) if a != b and gaps[i] > 1e-4]
        first = next((i for i, (a, b) in enumerate(zip(got, ids[len(prompt):])) if a != b), None)
        good = len(got) == ntok and not (first is not None and first in bad)
        print("%-4s %s, %d greedy tokens with the KV cache: %s" % ("ok" if good else "FAIL", name, ntok,
              "identical" if first is None else "first difference at %d (top-2 gap %.2g)" % (first, gaps[first])))
        text_ok = '"Hello world!' in r.stdout
        print("%-4s %s, vocab.json decoding: %s" % ("ok" if text_ok else "FAIL", name, r.stdout.split("\n")[1][:80]))
        rec = "0 recompiles" in r.stdout
        print("%-4s %s, decode step compiled once: %s" % ("ok" if rec else "FAIL", name,
              [l for l in r.stdout.split("\n") if l.startswith("decode step")][:1]))
        yield ok and good and text_ok and rec


# ---- ViT, timm's layout and Hugging Face's ----

def vit_random(gen, D, depth, patch, grid, classes):
    r = lambda *shape, std=0.05: torch.randn(*shape, generator=gen, dtype=torch.float64) * std
    sd = {"patch_embed.proj.weight": r(D, 3, patch, patch, std=0.1), "patch_embed.proj.bias": r(D, std=0.02),
          "cls_token": r(1, 1, D, std=0.5), "pos_embed": r(1, grid * grid + 1, D, std=0.5)}
    for i in range(depth):
        p = "blocks.%d." % i
        sd[p + "norm1.weight"] = 1 + r(D, std=0.1)
        sd[p + "norm1.bias"] = r(D, std=0.1)
        sd[p + "attn.qkv.weight"] = r(3 * D, D, std=0.15)
        sd[p + "attn.qkv.bias"] = r(3 * D, std=0.1)
        sd[p + "attn.proj.weight"] = r(D, D, std=0.15)
        sd[p + "attn.proj.bias"] = r(D, std=0.1)
        sd[p + "norm2.weight"] = 1 + r(D, std=0.1)
        sd[p + "norm2.bias"] = r(D, std=0.1)
        sd[p + "mlp.fc1.weight"] = r(4 * D, D, std=0.15)
        sd[p + "mlp.fc1.bias"] = r(4 * D, std=0.1)
        sd[p + "mlp.fc2.weight"] = r(D, 4 * D, std=0.1)
        sd[p + "mlp.fc2.bias"] = r(D, std=0.1)
    sd["norm.weight"] = 1 + r(D, std=0.1)
    sd["norm.bias"] = r(D, std=0.1)
    sd["head.weight"] = r(classes, D, std=0.2)
    sd["head.bias"] = r(classes, std=0.1)
    return sd


def vit_logits(sd, depth, heads, patch, eps, x):
    D = sd["cls_token"].shape[2]
    t = F.conv2d(x, sd["patch_embed.proj.weight"], sd["patch_embed.proj.bias"], stride=patch).flatten(2).transpose(1, 2)
    t = torch.cat([sd["cls_token"].expand(x.shape[0], 1, D), t], 1) + sd["pos_embed"]
    B, N, _ = t.shape
    for i in range(depth):
        p = "blocks.%d." % i
        h = F.layer_norm(t, (D,), sd[p + "norm1.weight"], sd[p + "norm1.bias"], eps)
        qkv = (h @ sd[p + "attn.qkv.weight"].T + sd[p + "attn.qkv.bias"]).view(B, N, 3, heads, D // heads).permute(2, 0, 3, 1, 4)
        a = torch.softmax(qkv[0] @ qkv[1].transpose(-1, -2) / (D // heads) ** 0.5, -1) @ qkv[2]
        t = t + a.transpose(1, 2).reshape(B, N, D) @ sd[p + "attn.proj.weight"].T + sd[p + "attn.proj.bias"]
        h = F.layer_norm(t, (D,), sd[p + "norm2.weight"], sd[p + "norm2.bias"], eps)
        h = F.gelu(h @ sd[p + "mlp.fc1.weight"].T + sd[p + "mlp.fc1.bias"])
        t = t + h @ sd[p + "mlp.fc2.weight"].T + sd[p + "mlp.fc2.bias"]
    t = F.layer_norm(t[:, 0], (D,), sd["norm.weight"], sd["norm.bias"], eps)
    return t @ sd["head.weight"].T + sd["head.bias"]


def vit_to_hf(sd, depth):
    """timm names -> Hugging Face's ViTForImageClassification names (q, k, v apart)"""
    D = sd["cls_token"].shape[2]
    hf = {"vit.embeddings.cls_token": sd["cls_token"], "vit.embeddings.position_embeddings": sd["pos_embed"],
          "vit.embeddings.patch_embeddings.projection.weight": sd["patch_embed.proj.weight"],
          "vit.embeddings.patch_embeddings.projection.bias": sd["patch_embed.proj.bias"],
          "vit.layernorm.weight": sd["norm.weight"], "vit.layernorm.bias": sd["norm.bias"],
          "classifier.weight": sd["head.weight"], "classifier.bias": sd["head.bias"]}
    ren = {"norm1": "layernorm_before", "attn.proj": "attention.output.dense", "norm2": "layernorm_after",
           "mlp.fc1": "intermediate.dense", "mlp.fc2": "output.dense"}
    for i in range(depth):
        p, q = "blocks.%d." % i, "vit.encoder.layer.%d." % i
        for a, b in ren.items():
            for w in ("weight", "bias"):
                hf[q + b + "." + w] = sd[p + a + "." + w]
        for w in ("weight", "bias"):
            for j, part in enumerate(("query", "key", "value")):
                hf[q + "attention.attention." + part + "." + w] = sd[p + "attn.qkv." + w][j * D:(j + 1) * D]
    return hf


def vit_cases(build, tmp, gen):
    cases = [("vit (timm layout)", False, 64, 3, 2, 8, 4, 11), ("vit (Hugging Face layout)", True, 96, 2, 3, 16, 3, 6)]
    for name, hf, D, depth, heads, patch, grid, classes in cases:
        sd = vit_random(gen, D, depth, patch, grid, classes)
        sd32 = {k: v.float().double() for k, v in sd.items()}
        ck = os.path.join(tmp, "vit.safetensors")
        save_file(ck, {k: v.float().numpy() for k, v in (vit_to_hf(sd, depth) if hf else sd).items()})
        size = patch * grid
        img = (torch.rand(size, size, 3, generator=gen) * 255).to(torch.uint8).numpy()
        ppm = os.path.join(tmp, "vit.ppm")
        write_ppm(ppm, img)
        x = (torch.from_numpy(img.astype(np.float64) / 255.0).permute(2, 0, 1).unsqueeze(0) - 0.5) / 0.5
        with torch.no_grad():
            want = vit_logits(sd32, depth, heads, patch, 1e-12 if hf else 1e-6, x)[0].numpy()
        dump = os.path.join(tmp, "vit.txt")
        r = subprocess.run([os.path.join(build, "vit"), "--weights", ck, "--image", ppm, "--heads", str(heads), "--runs", "1",
                            "--dump", dump], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s: the example exited %d: %s" % (name, r.returncode, (r.stderr or r.stdout)[-400:]))
            yield False
            continue
        yield compare(name, want, dump, 1e-4)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    gen = torch.Generator().manual_seed(1234)
    torch.manual_seed(1234)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for cases in (resnet_cases, gpt2_cases, vit_cases):
            for ok in cases(build, tmp, gen):
                passed += ok
                failed += not ok
    print("%d passed, %d failed, 0 skipped" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
