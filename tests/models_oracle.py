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


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    gen = torch.Generator().manual_seed(1234)
    torch.manual_seed(1234)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ok in resnet_cases(build, tmp, gen):
            passed += ok
            failed += not ok
    print("%d passed, %d failed, 0 skipped" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
