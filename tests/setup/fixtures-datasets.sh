#!/usr/bin/env bash
# Make the dataset fixtures rv-decode reads, under OUTDIR, from the images
# of tests/setup/fixtures-images.sh in IMGDIR: an ImageFolder tree, WebDataset
# tars (sidecar labels, directory labels; as tar.gz, tar.zst and zip too),
# broken and truncated archives, and a small CIFAR-10 batch.  The bytes are
# the same on every run (sorted members, fixed times and owners).
# Usage: tests/setup/fixtures-datasets.sh IMGDIR OUTDIR
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 IMGDIR OUTDIR" >&2
	exit 2
fi
img=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
cd "$out"
rm -rf -- folder flat stage cifar ./*.tar ./*.tar.gz ./*.tar.zst ./*.zip

# Deterministic tar of the entries of directory $2, into $1.
mktar() {
	tar --format=gnu --sort=name --mtime=@0 --owner=0 --group=0 \
	    --numeric-owner -C "$2" -cf "$1" .
}

# Deterministic zip of the entries of directory $2, into $1 (python's
# zipfile, so the bytes do not depend on which zip is installed).
mkzip() {
	python3 - "$1" "$2" <<'EOF'
import os
import sys
import zipfile

dst, root = sys.argv[1], sys.argv[2]
names = []
for d, dirs, files in os.walk(root):
    for f in files:
        names.append(os.path.relpath(os.path.join(d, f), root))
with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
    for n in sorted(names):
        info = zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        with open(os.path.join(root, n), "rb") as f:
            z.writestr(info, f.read())
EOF
}

# folder/: ImageFolder, three classes, one with a nested folder, plus
# files that are no samples (text, hidden).  Sorted: cat/a.jpg cat/b.png
# cat/c.JPG dog/d.jpg dog/puppies/e.png dog/puppies/f.jpeg zebra/g.png
# zebra/h.png, labels 0 0 0 1 1 1 2 2.
mkdir -p folder/cat folder/dog/puppies folder/zebra
cp "$img/rgb.jpg" folder/cat/a.jpg
cp "$img/rgb.png" folder/cat/b.png
cp "$img/grey.jpg" folder/cat/c.JPG
cp "$img/cmyk.jpg" folder/dog/d.jpg
cp "$img/palette.png" folder/dog/puppies/e.png
cp "$img/progressive.jpg" folder/dog/puppies/f.jpeg
cp "$img/grey.png" folder/zebra/g.png
cp "$img/rgba.png" folder/zebra/h.png
printf 'not a sample\n' > folder/README.txt
printf 'not a sample\n' > folder/cat/notes.txt
cp "$img/rgb.jpg" folder/dog/.hidden.jpg

# flat/: images at the top level only, so no labels.
mkdir -p flat
cp "$img/rgb.jpg" flat/1.jpg
cp "$img/rgb.png" flat/2.png
cp "$img/interlaced.png" flat/3.png

# wds.tar: WebDataset shards with sidecar labels in nested folders.
# Samples (sorted keys) and labels: train/x/0001 3, train/x/0002 7,
# train/y/0003 5 (.txt), train/y/0004 9 (.json), train/z/0005 1 (image
# 0005.jpg, not 0005.seg.png).  0001 also has a caption .txt.
s=stage/wds
mkdir -p "$s/train/x" "$s/train/y" "$s/train/z"
cp "$img/rgb.jpg" "$s/train/x/0001.jpg"
printf '3\n' > "$s/train/x/0001.cls"
printf 'a plasma, coloured\n' > "$s/train/x/0001.txt"
cp "$img/rgb.png" "$s/train/x/0002.png"
printf '7' > "$s/train/x/0002.cls"
cp "$img/grey.jpg" "$s/train/y/0003.jpg"
printf ' 5 \n' > "$s/train/y/0003.txt"
cp "$img/cmyk.jpg" "$s/train/y/0004.jpg"
printf '{"caption": "x", "label": 9}\n' > "$s/train/y/0004.json"
cp "$img/progressive.jpg" "$s/train/z/0005.jpg"
cp "$img/grey.png" "$s/train/z/0005.seg.png"
printf '1\n' > "$s/train/z/0005.cls"
mktar wds.tar "$s"

# dirs.*: no sidecars, labels from each key's parent folder (cat 0,
# dog 1, zebra 2; "imgs" above them is not a class).  Sorted keys:
# imgs/cat/1 imgs/cat/2 imgs/dog/3 imgs/zebra/4 imgs/zebra/5.
s=stage/dirs
mkdir -p "$s/imgs/cat" "$s/imgs/dog" "$s/imgs/zebra"
cp "$img/rgb.jpg" "$s/imgs/cat/1.jpg"
cp "$img/rgb.png" "$s/imgs/cat/2.png"
cp "$img/grey.jpg" "$s/imgs/dog/3.jpg"
cp "$img/palette.png" "$s/imgs/zebra/4.png"
cp "$img/rgb16.png" "$s/imgs/zebra/5.png"
mktar dirs.tar "$s"
gzip -n -9 -c dirs.tar > dirs.tar.gz
zstd -q -19 -c dirs.tar > dirs.tar.zst
mkzip dirs.zip "$s"

# broken.tar: bad images (decoding fails later, listing keeps them), an
# orphan sidecar (skipped, counted), a symbolic and a hard link to
# good.jpg (followed: samples of their own), a hidden file and a directory
# entry (ignored) and names with a newline and a 0xff byte.
# Samples: corrupt, good, hard, link, "odd\nname", truncated, "\xff";
# 1 skipped.
s=stage/broken
mkdir -p "$s/empty-dir"
cp "$img/rgb.jpg" "$s/good.jpg"
cp "$img/corrupt.jpg" "$s/corrupt.jpg"
cp "$img/truncated.jpg" "$s/truncated.jpg"
printf '4\n' > "$s/orphan.cls"
ln -s good.jpg "$s/link.jpg"
ln "$s/good.jpg" "$s/hard.jpg"
cp "$img/rgb.jpg" "$s/._good.jpg"
cp "$img/grey.jpg" "$s/odd"$'\n'"name.jpg"
cp "$img/rgb.png" "$s/"$'\xff'".jpg"
mktar broken.tar "$s"

# broken.zip: member ok.jpg, then bad.jpg with a byte of its deflated data
# flipped, so reading it fails; 1 sample, 1 skipped.
s=stage/badzip
mkdir -p "$s"
cp "$img/rgb.jpg" "$s/bad.jpg"
cp "$img/rgb.png" "$s/ok.png"
mkzip broken.zip "$s"
python3 - broken.zip <<'EOF'
import struct
import sys

p = sys.argv[1]
z = bytearray(open(p, "rb").read())
# The first local header is bad.jpg's (sorted); flip a byte mid-data.
assert z[:4] == b"PK\x03\x04"
n, m = struct.unpack("<HH", z[26:30])
size = struct.unpack("<I", z[18:22])[0]
z[30 + n + m + size // 2] ^= 0xff
open(p, "wb").write(z)
EOF

# cut.tar: a.jpg b.jpg c.jpg, cut in the middle of c.jpg's data, so a
# and b are kept, and the truncation is warned about and counted.
s=stage/cut
mkdir -p "$s"
cp "$img/rgb.jpg" "$s/a.jpg"
cp "$img/grey.jpg" "$s/b.jpg"
cp "$img/cmyk.jpg" "$s/c.jpg"
mktar whole.tar "$s"
pad() { echo $((($1 + 511) / 512 * 512)); }
a=$(pad "$(wc -c < "$s/a.jpg")")
b=$(pad "$(wc -c < "$s/b.jpg")")
# Entries: "./" (a header), a, b, then c's header and 100 bytes of data.
head -c $((512 + 512 + a + 512 + b + 512 + 100)) whole.tar > cut.tar
rm -f whole.tar

# cifar/: a CIFAR-10 batch of 20 records (label i % 10, pixels from a
# formula over record, channel, row and column) and its class names.
mkdir -p cifar
python3 - cifar/data_batch_1.bin <<'EOF'
import sys

recs = bytearray()
for i in range(20):
    recs.append(i % 10)
    for ch in range(3):
        for y in range(32):
            for x in range(32):
                recs.append((i * 7 + ch * 50 + y * 3 + x) & 255)
open(sys.argv[1], "wb").write(recs)
EOF
printf '%s\n' airplane automobile bird cat deer dog frog horse ship truck \
    '' > cifar/batches.meta.txt

rm -rf stage
