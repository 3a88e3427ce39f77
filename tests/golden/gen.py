#!/usr/bin/python3
# Golden outputs for rv's augmentation ops: torchvision 0.14 on PIL images
# (Pillow 9.4), fixed parameters, no randomness.  Writes the inputs (a
# synthetic photo-like image, made here deterministically), one PNG per case
# and cases.tsv, read by tests/unit/t_aug_golden.c.  Rerun after changing a
# case: /usr/bin/python3 tests/golden/gen.py (torch is not needed to test).
import os
import sys

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image, ImageDraw
from torchvision.transforms import InterpolationMode as IM
from torchvision.transforms import autoaugment

HERE = os.path.dirname(os.path.abspath(__file__))
NEAREST, BILINEAR, BICUBIC = IM.NEAREST, IM.BILINEAR, IM.BICUBIC
INAME = {NEAREST: "nearest", BILINEAR: "bilinear", BICUBIC: "bicubic"}

# ---- tolerances: (max abs diff, fraction of pixels allowed > 1, why) ----
# A pixel "exceeds" when any of its channels differs by more than 1.
EXACT = (0, 0.0, "integer index/LUT arithmetic: must be bit-exact")
BLEND = (1, 0.0, "PIL blends in float32 and truncates; a double-precision "
         "blend may land on the other side of an integer")
HSV = (1, 0.0, "PIL's RGB<->HSV round trip is float32 with truncation and "
       "rounding; a double implementation may differ by 1 at ties")
RESAMPLE = (1, 0.0, "PIL resample: 22-bit fixed-point weights and a u8 "
            "horizontal pass rounded before the vertical one")
RESAMPLE_CUBIC = (2, 0.005, "as resample, and the negative lobes of the "
                  "cubic amplify the u8 rounding of the first pass")
NEAREST_AFFINE = (255, 0.01, "PIL's nearest affine samples floor() of "
                  "16.16 fixed-point coordinates accumulated per pixel; "
                  "a double implementation may pick the neighbour where "
                  "a sample point is within 2^-16 of a pixel edge")
BILIN_AFFINE = (1, 0.0, "PIL's bilinear transform truncates (not rounds) "
                "the interpolated value to u8: a rounding implementation is "
                "off by one on about half the pixels")
NEAREST_SCALE = (0, 0.0, "PIL's nearest resize steps x_in = scale/2 + "
                 "k*scale by repeated double addition and floors it; where "
                 "(x+0.5)*scale is an integer the accumulated rounding "
                 "decides, so replicate the accumulation")
TENSOR = (1, 0.0, "antialias=0 exists in torchvision only for tensors: "
          "torch's interpolate (bicubic: Keys a=-0.75, edge indices "
          "clamped) in float32, rounded; fixed-point weights may differ "
          "by 1 at ties")


# ---- inputs ----

def synth(h, w, seed):
    """A photo-like RGB image: gradients, a hue band, a disc, a box, thin
    glyph-like strokes and mild noise; channel ranges kept inside
    [12, 243] so that autocontrast has work to do."""
    rs = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 40 + 150 * x / (w - 1) + 20 * np.sin(y / 5.0)
    g = 60 + 120 * y / (h - 1) + 25 * np.cos(x / 7.0)
    b = 200 - 130 * (x + y) / (w + h - 2)
    px = np.stack([r, g, b], -1)
    # hue band along the bottom: saturated colours of every hue
    band = y >= h - 9
    hue = x / w * 6.0
    for c, off in enumerate((0.0, 4.0, 2.0)):
        k = np.abs(((hue + off) % 6.0) - 3.0) - 1.0
        val = 20 + 215 * np.clip(k, 0.0, 1.0)
        px[..., c] = np.where(band, val, px[..., c])
    # disc with a sharp rim
    d2 = (x - 0.70 * w) ** 2 + (y - 0.33 * h) ** 2
    disc = d2 < (0.17 * w) ** 2
    px[disc] = (230, 200, 40)
    ring = (d2 >= (0.17 * w) ** 2) & (d2 < (0.17 * w + 1.5) ** 2)
    px[ring] = (90, 40, 20)
    # box
    px[(x >= 4) & (x < 0.3 * w) & (y >= 5) & (y < 0.45 * h)] = (30, 110, 170)
    # texture (noise) in a band across the middle only: keeps PNGs small
    tex = (y >= 0.45 * h) & (y < h - 9)
    px += np.where(tex[..., None], rs.normal(0.0, 4.0, px.shape), 0.0)
    px = np.clip(np.rint(px), 12, 243).astype(np.uint8)
    im = Image.fromarray(px, "RGB")
    # glyph-like strokes in the box and across the middle
    dr = ImageDraw.Draw(im)
    dr.line([(6, 7), (9, 15), (12, 7)], fill=(235, 235, 225), width=1)
    dr.line([(14, 7), (14, 15), (17, 15)], fill=(235, 235, 225), width=1)
    dr.line([(2, int(0.6 * h)), (w - 3, int(0.5 * h))], fill=(20, 20, 30))
    dr.rectangle([int(0.45 * w), int(0.55 * h), int(0.45 * w) + 5,
        int(0.55 * h) + 3], outline=(240, 60, 60))
    return im


# ---- cases ----

cases = []	# (name, spec, input, callable, tolerance)


def case(name, spec, inp, fn, tol):
    cases.append((name, spec, inp, fn, tol))


def fmt(v):
    """A number as the spec should spell it: ints plain, floats exact."""
    if isinstance(v, int) or float(v).is_integer():
        return str(int(v))
    return repr(float(v))


def fillspec(fill):
    if fill is None:
        return ""
    if isinstance(fill, (list, tuple)):
        return " fill=" + ",".join(str(v) for v in fill)
    return " fill=%d" % fill


def ra_op(name, mag, interp=NEAREST, fill=None):
    return lambda im: autoaugment._apply_op(im, name, mag, interp, fill)


def define_cases(rgb, grey, sq):
    H, W = rgb.height, rgb.width

    # -- shear (RandAugment semantics: centre [0, 0], v = tan(angle))
    for op, ra in (("shear_x", "ShearX"), ("shear_y", "ShearY")):
        for v in (0.09, -0.09, 0.3, -0.3):
            for interp in (NEAREST, BILINEAR):
                tol = NEAREST_AFFINE if interp == NEAREST else BILIN_AFFINE
                case("%s_%s_%s" % (op, fmt(v), INAME[interp]),
                    "%s v=%s interp=%s" % (op, fmt(v), INAME[interp]),
                    "rgb", ra_op(ra, v, interp), tol)
        for fill in (128, [255, 64, 0]):
            for interp in (NEAREST, BILINEAR):
                tol = NEAREST_AFFINE if interp == NEAREST else BILIN_AFFINE
                fs = "r_g_b" if isinstance(fill, list) else str(fill)
                case("%s_0.3_%s_fill%s" % (op, INAME[interp], fs),
                    "%s v=0.3 interp=%s%s" % (op, INAME[interp],
                    fillspec(fill)), "rgb", ra_op(ra, 0.3, interp, fill),
                    tol)
        case("%s_-0.3_bilinear_grey_fill128" % op,
            "%s v=-0.3 interp=bilinear fill=128" % op, "grey",
            ra_op(ra, -0.3, BILINEAR, 128), BILIN_AFFINE)

    # -- translate (whole pixels)
    for op, ra in (("translate_x", "TranslateX"),
        ("translate_y", "TranslateY")):
        for px in (13, -13):
            case("%s_%d" % (op, px), "%s px=%d" % (op, px), "rgb",
                ra_op(ra, px), EXACT)
        case("%s_13_bilinear_fill128" % op,
            "%s px=13 interp=bilinear fill=128" % op, "rgb",
            ra_op(ra, 13, BILINEAR, 128), EXACT)
        case("%s_-13_grey_fill200" % op, "%s px=-13 fill=200" % op,
            "grey", ra_op(ra, -13, NEAREST, 200), EXACT)

    # -- rotate (about the centre, counter-clockwise, no expand)
    for deg in (9, -30, 135, 90, 180):
        case("rotate_%s_nearest" % deg, "rotate deg=%s" % deg, "rgb",
            lambda im, d=deg: F.rotate(im, d, NEAREST), NEAREST_AFFINE)
    for deg in (9, -30, 135):
        case("rotate_%s_bilinear" % deg,
            "rotate deg=%s interp=bilinear" % deg, "rgb",
            lambda im, d=deg: F.rotate(im, d, BILINEAR), BILIN_AFFINE)
    case("rotate_-30_nearest_fill128", "rotate deg=-30 fill=128", "rgb",
        lambda im: F.rotate(im, -30, NEAREST, fill=128), NEAREST_AFFINE)
    case("rotate_135_bilinear_fill_r_g_b",
        "rotate deg=135 interp=bilinear fill=255,64,0", "rgb",
        lambda im: F.rotate(im, 135, BILINEAR, fill=[255, 64, 0]),
        BILIN_AFFINE)
    case("rotate_9_bilinear_grey", "rotate deg=9 interp=bilinear", "grey",
        lambda im: F.rotate(im, 9, BILINEAR), BILIN_AFFINE)

    # -- resize: shorter side -> size (torchvision truncates the longer)
    for size in (24, 100, 40):
        for interp in (BILINEAR, BICUBIC, NEAREST):
            tol = {BILINEAR: RESAMPLE, BICUBIC: RESAMPLE_CUBIC,
                NEAREST: NEAREST_SCALE}[interp]
            case("resize_%d_%s" % (size, INAME[interp]),
                "resize size=%d interp=%s" % (size, INAME[interp]), "rgb",
                lambda im, s=size, i=interp: F.resize(im, s, i), tol)
    case("resize_17_bicubic_grey", "resize size=17 interp=bicubic", "grey",
        lambda im: F.resize(im, 17, BICUBIC), RESAMPLE_CUBIC)
    case("resize_30_bilinear_sq", "resize size=30", "sq",
        lambda im: F.resize(im, 30, BILINEAR), RESAMPLE)
    # antialias=0: torchvision's only meaning is the tensor path
    for interp in (BILINEAR, BICUBIC):
        case("resize_24_%s_noaa" % INAME[interp],
            "resize size=24 interp=%s antialias=0" % INAME[interp], "rgb",
            lambda im, i=interp: tensor_op(im,
            lambda t: F.resize(t, 24, i, antialias=False)), TENSOR)

    # -- crops
    for size in (24, 23, 25, 48, 61, 64):
        case("center_crop_%d" % size, "center_crop size=%d" % size, "rgb",
            lambda im, s=size: F.center_crop(im, [s, s]), EXACT)
    case("center_crop_23_grey", "center_crop size=23", "grey",
        lambda im: F.center_crop(im, [23, 23]), EXACT)
    for t, l, h, w in ((5, 7, 20, 30), (0, 0, 40, 56), (-4, 40, 30, 24),
        (30, 50, 20, 20)):
        case("crop_%d_%d_%d_%d" % (t, l, h, w),
            "crop top=%d left=%d height=%d width=%d" % (t, l, h, w), "rgb",
            lambda im, a=(t, l, h, w): F.crop(im, *a), EXACT)
    for t, l, h, w, interp in ((4, 10, 30, 36, BILINEAR),
        (4, 10, 30, 36, BICUBIC), (4, 10, 30, 36, NEAREST),
        (10, 10, 12, 16, BILINEAR)):
        tol = {BILINEAR: RESAMPLE, BICUBIC: RESAMPLE_CUBIC,
            NEAREST: NEAREST_SCALE}[interp]
        case("resized_crop_%d_%d_%d_%d_%s" % (t, l, h, w, INAME[interp]),
            "resized_crop top=%d left=%d height=%d width=%d size=32 "
            "interp=%s" % (t, l, h, w, INAME[interp]), "rgb",
            lambda im, a=(t, l, h, w), i=interp:
            F.resized_crop(im, *a, [32, 32], i), tol)
    # rrc, deterministic: with scale=1,1 no attempt fits a 40x56 image
    # (h <= 40 needs ratio > 1.366), so the centre fallback (0, 1, 40, 53)
    # is taken; with ratio=1.4,1.4 the whole image fits exactly.
    check_rrc(rgb)
    case("rrc_32_fallback", "rrc size=32 scale=1,1", "rgb",
        lambda im: F.resized_crop(im, 0, 1, 40, 53, [32, 32], BILINEAR),
        RESAMPLE)
    case("rrc_32_fallback_bicubic", "rrc size=32 scale=1,1 interp=bicubic",
        "rgb", lambda im: F.resized_crop(im, 0, 1, 40, 53, [32, 32],
        BICUBIC), RESAMPLE_CUBIC)
    case("rrc_32_whole", "rrc size=32 scale=1,1 ratio=1.4,1.4", "rgb",
        lambda im: F.resize(im, [32, 32], BILINEAR), RESAMPLE)
    # random_crop of the padded image at its full size: only the padding
    check_random_crop(sq)
    for mode in ("constant", "edge", "reflect", "symmetric"):
        case("random_crop_40_pad4_%s" % mode,
            "random_crop size=40 padding=4 pad_mode=%s" % mode, "sq",
            lambda im, m=mode: T.RandomCrop(40, padding=4,
            padding_mode=m)(im), EXACT)
    case("random_crop_40_pad4_fill_r_g_b",
        "random_crop size=40 padding=4 fill=255,64,0", "sq",
        lambda im: T.RandomCrop(40, padding=4, fill=(255, 64, 0))(im),
        EXACT)
    case("random_crop_32_pad0", "random_crop size=32", "sq",
        lambda im: T.RandomCrop(32)(im), EXACT)

    # -- flips
    case("flip", "flip p=1", "rgb", F.hflip, EXACT)
    case("vflip", "vflip p=1", "rgb", F.vflip, EXACT)
    case("flip_grey", "flip p=1", "grey", F.hflip, EXACT)
    case("flip_p0", "flip p=0", "rgb", lambda im: im, EXACT)

    # -- ImageEnhance family
    for op, fn in (("brightness", F.adjust_brightness),
        ("color", F.adjust_saturation), ("contrast", F.adjust_contrast),
        ("sharpness", F.adjust_sharpness)):
        for f in (0, 0.5, 1.27, 1.9):
            case("%s_%s" % (op, fmt(f)), "%s f=%s" % (op, fmt(f)), "rgb",
                lambda im, f=f, fn=fn: fn(im, f), BLEND)
        for f in (0.5, 1.9):
            case("%s_%s_grey" % (op, fmt(f)), "%s f=%s" % (op, fmt(f)),
                "grey", lambda im, f=f, fn=fn: fn(im, f), BLEND)
    case("sharpness_5", "sharpness f=5", "rgb",
        lambda im: F.adjust_sharpness(im, 5), BLEND)

    # -- lookup-table ops
    for bits in (0, 1, 2, 4, 7, 8):
        case("posterize_%d" % bits, "posterize bits=%d" % bits, "rgb",
            lambda im, b=bits: F.posterize(im, b), EXACT)
    case("posterize_3_grey", "posterize bits=3", "grey",
        lambda im: F.posterize(im, 3), EXACT)
    for t in (0, 128, 178.5, 255, 256):
        case("solarize_%s" % fmt(t), "solarize threshold=%s" % fmt(t),
            "rgb", lambda im, t=t: F.solarize(im, t), EXACT)
    case("solarize_100_grey", "solarize threshold=100", "grey",
        lambda im: F.solarize(im, 100), EXACT)
    for inp in ("rgb", "grey"):
        case("autocontrast_" + inp, "autocontrast", inp, F.autocontrast,
            EXACT)
        case("equalize_" + inp, "equalize", inp, F.equalize, EXACT)
        case("invert_" + inp, "invert", inp, F.invert, EXACT)
    case("autocontrast_sq", "autocontrast", "sq", F.autocontrast, EXACT)
    case("equalize_sq", "equalize", "sq", F.equalize, EXACT)

    # -- hue (PIL HSV, hue shifted by uint8(int(f * 255)) mod 256)
    for f in (-0.5, -0.1, 0.25, 0.5):
        case("hue_%s" % fmt(f), "hue f=%s" % fmt(f), "rgb",
            lambda im, f=f: F.adjust_hue(im, f), HSV)
    case("hue_0", "hue f=0", "rgb", lambda im: F.adjust_hue(im, 0.0), HSV)
    case("hue_0.25_grey", "hue f=0.25", "grey",
        lambda im: F.adjust_hue(im, 0.25), EXACT)

    # -- grayscale, keeping the channel count
    for inp in ("rgb", "grey"):
        case("grayscale_" + inp, "grayscale", inp,
            lambda im: F.to_grayscale(im, len(im.getbands())), EXACT)

    # -- chains: ops applied in order through one spec
    case("chain_brightness_solarize255",
        "brightness f=1.9; solarize threshold=255", "rgb",
        lambda im: F.solarize(F.adjust_brightness(im, 1.9), 255), BLEND)
    case("chain_brightness_solarize256",
        "brightness f=1.9; solarize threshold=256", "rgb",
        lambda im: F.solarize(F.adjust_brightness(im, 1.9), 256), BLEND)
    case("chain_eval", "resize size=32; center_crop size=28; flip p=1",
        "rgb", lambda im: F.hflip(F.center_crop(F.resize(im, 32), [28, 28])),
        RESAMPLE)

    # -- edge cases: degenerate histograms, tiny images, extremes
    case("chain_black_equalize", "brightness f=0; equalize", "rgb",
        lambda im: F.equalize(F.adjust_brightness(im, 0)), EXACT)
    case("chain_posterize1_equalize", "posterize bits=1; equalize", "rgb",
        lambda im: F.equalize(F.posterize(im, 1)), EXACT)
    case("chain_posterize1_autocontrast", "posterize bits=1; autocontrast",
        "rgb", lambda im: F.autocontrast(F.posterize(im, 1)), EXACT)
    case("chain_grayscale_hue", "grayscale; hue f=0.25", "rgb",
        lambda im: F.adjust_hue(F.to_grayscale(im, 3), 0.25), HSV)
    case("chain_tiny_sharpness", "resize size=2 interp=nearest; "
        "sharpness f=1.9", "rgb", lambda im: F.adjust_sharpness(
        F.resize(im, 2, NEAREST), 1.9), BLEND)
    case("chain_tiny_equalize", "resize size=3 interp=nearest; equalize",
        "rgb", lambda im: F.equalize(F.resize(im, 3, NEAREST)), EXACT)
    case("resize_7_bicubic", "resize size=7 interp=bicubic", "rgb",
        lambda im: F.resize(im, 7, BICUBIC), RESAMPLE_CUBIC)
    case("translate_x_60_fill128", "translate_x px=60 fill=128", "rgb",
        ra_op("TranslateX", 60, NEAREST, 128), EXACT)
    for v in (1.0, -1.0):
        case("shear_x_%s_bilinear" % fmt(v),
            "shear_x v=%s interp=bilinear" % fmt(v), "sq",
            ra_op("ShearX", v, BILINEAR), BILIN_AFFINE)
        case("shear_y_%s_nearest" % fmt(v), "shear_y v=%s" % fmt(v), "sq",
            ra_op("ShearY", v, NEAREST), NEAREST_AFFINE)
    for deg in (90, 270, 45, -360):
        case("rotate_%d_sq" % deg, "rotate deg=%d" % deg, "sq",
            lambda im, d=deg: F.rotate(im, d, NEAREST), NEAREST_AFFINE)
    case("rotate_33.3_bilinear_sq", "rotate deg=33.3 interp=bilinear", "sq",
        lambda im: F.rotate(im, 33.3, BILINEAR), BILIN_AFFINE)

    # -- deterministic forms of the random ops
    case("identity", "identity", "rgb", lambda im: im, EXACT)
    case("jitter_zero", "jitter", "rgb", T.ColorJitter(), EXACT)
    case("erase_nofit", "erase scale=1,1 p=1", "rgb",
        lambda im: tensor_op(im, T.RandomErasing(p=1.0, scale=(1.0, 1.0))),
        EXACT)
    case("randaugment_n0", "randaugment n=0", "rgb",
        T.RandAugment(num_ops=0), EXACT)

    # -- RandAugment magnitudes as torchvision's _augmentation_space
    # computes them (float32 linspace), applied through its _apply_op
    ra = T.RandAugment()
    for m in (9, 30):
        space = ra._augmentation_space(31, (H, W))
        for name, (mags, signed) in space.items():
            if mags.ndim == 0:
                continue	# Identity, AutoContrast, Equalize: above
            mag = float(mags[m].item())
            for sign in ((1, -1) if signed else (1,)):
                v = sign * mag
                ra_case(name, m, v)
    # the ImageNet recipe's bilinear RandAugment on geometry
    space = ra._augmentation_space(31, (H, W))
    for name in ("ShearX", "ShearY", "Rotate"):
        v = float(space[name][0][9].item())
        ra_case(name, 9, v, BILINEAR)


def ra_case(name, m, v, interp=NEAREST):
    """One RandAugment op at magnitude value v, as rv's standalone op."""
    sgn = "m" if v < 0 else "p"
    tag = "ra%d_%s_%s" % (m, name.lower(), sgn)
    isuf = ""
    if interp != NEAREST:
        tag += "_" + INAME[interp]
        isuf = " interp=" + INAME[interp]
    if name in ("ShearX", "ShearY"):
        op = "shear_x" if name == "ShearX" else "shear_y"
        spec = "%s v=%s%s" % (op, fmt(v), isuf)
        tol = NEAREST_AFFINE if interp == NEAREST else BILIN_AFFINE
    elif name in ("TranslateX", "TranslateY"):
        op = "translate_x" if name == "TranslateX" else "translate_y"
        spec = "%s px=%d" % (op, int(v))
        tol = EXACT
    elif name == "Rotate":
        spec = "rotate deg=%s%s" % (fmt(v), isuf)
        tol = NEAREST_AFFINE if interp == NEAREST else BILIN_AFFINE
    elif name in ("Brightness", "Color", "Contrast", "Sharpness"):
        spec = "%s f=%s" % (name.lower(), fmt(1.0 + v))
        tol = BLEND
    elif name == "Posterize":
        spec = "posterize bits=%d" % int(v)
        tol = EXACT
    elif name == "Solarize":
        spec = "solarize threshold=%s" % fmt(v)
        tol = EXACT
    else:
        raise SystemExit("gen.py: unknown RandAugment op '%s'" % name)
    case(tag, spec, "rgb", ra_op(name, v, interp), tol)


def tensor_op(im, fn):
    """Apply a tensor transform to a PIL image, back to PIL."""
    t = F.pil_to_tensor(im)
    return F.to_pil_image(fn(t))


def check_rrc(im):
    for seed in range(20):
        torch.manual_seed(seed)
        p = T.RandomResizedCrop.get_params(im, [1.0, 1.0], [3 / 4, 4 / 3])
        assert tuple(p) == (0, 1, 40, 53), p
        p = T.RandomResizedCrop.get_params(im, [1.0, 1.0], [1.4, 1.4])
        assert tuple(p) == (0, 0, 40, 56), p


def check_random_crop(im):
    for seed in range(5):
        torch.manual_seed(seed)
        assert T.RandomCrop.get_params(F.pad(im, 4), (40, 40)) == \
            (0, 0, 40, 40)


def main():
    assert torchvision.__version__.startswith("0.14"), torchvision.__version__
    torch.manual_seed(0)
    rgb = synth(40, 56, 20240611)
    grey = rgb.convert("L")
    sq = synth(32, 32, 7)
    inputs = {"rgb": rgb, "grey": grey, "sq": sq}
    for name, im in inputs.items():
        im.save(os.path.join(HERE, "in-%s.png" % name), optimize=True)
    define_cases(rgb, grey, sq)
    for f in os.listdir(HERE):
        if f.endswith(".png") and not f.startswith("in-"):
            os.remove(os.path.join(HERE, f))
    seen = set()
    files = {}	# pixels -> the file already holding them
    for name, im in inputs.items():
        files[(im.mode, im.size, im.tobytes())] = "in-%s.png" % name
    rows = []
    for name, spec, inp, fn, tol in cases:
        assert name not in seen, name
        seen.add(name)
        out = fn(inputs[inp].copy())
        assert out.mode in ("L", "RGB"), (name, out.mode)
        key = (out.mode, out.size, out.tobytes())
        if key not in files:
            files[key] = "%s.png" % name
            out.save(os.path.join(HERE, files[key]), optimize=True)
        rows.append("%s\t%s\tin-%s.png\t%s\t%d\t%g\t%s" % (name, spec,
            inp, files[key], tol[0], tol[1], tol[2]))
    with open(os.path.join(HERE, "cases.tsv"), "w") as f:
        f.write("# Made by gen.py (torchvision %s, torch %s, Pillow %s): "
            "do not edit.\n" % (torchvision.__version__,
            torch.__version__, Image.__version__))
        f.write("# name\trv spec\tinput\texpected\tmax abs diff\t"
            "fraction of pixels > 1\twhy this tolerance\n")
        for r in rows:
            f.write(r + "\n")
    print("gen.py: %d cases" % len(rows), file=sys.stderr)


if __name__ == "__main__":
    main()
