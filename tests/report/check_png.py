#!/usr/bin/env python3
"""Checks that a screenshot is not blank: at least MIN distinct colours (default 16; a blank or
single-colour page has 1) and some dark pixels (text), read with Pillow (Debian's python3-pil).
Exit 77 (a skip) when Pillow is missing. usage: check_png.py SHOT.png [MIN]"""
import sys

try:
    from PIL import Image
except ImportError:
    print("SKIP: python3-pil is not installed (tools/install-deps.sh installs it)")
    sys.exit(77)


def main(path, minimum):
    image = Image.open(path).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 24)
    distinct = len(colours)
    dark = sum(count for count, (r, g, b) in colours if r + g + b < 200)
    print(f"{path}: {image.width}x{image.height}, {distinct} distinct colours, {dark} dark pixels")
    if distinct < minimum or dark == 0:
        print(f"FAIL: the screenshot looks blank (expected at least {minimum} colours and some text)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 16))
