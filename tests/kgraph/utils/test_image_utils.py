"""``kgraph.utils``'s image functions against Keras 3's on the same arrays and the same files."""
import builtins
import io
import pathlib
import warnings

import numpy as np
import pytest

from kgraph import utils

keras = pytest.importorskip("keras")
Image = pytest.importorskip("PIL.Image")

RNG = np.random.default_rng(7)
# Odd sizes so that a swapped height/width or an off-by-one crop shows.
RGB = RNG.uniform(-3.0, 5.0, size=(13, 21, 3)).astype("float32")
RGBA = RNG.uniform(0.0, 1.0, size=(13, 21, 4)).astype("float32")
GRAY = RNG.uniform(0.0, 1.0, size=(13, 21, 1)).astype("float32")
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _same_image(ours, theirs):
    assert isinstance(ours, Image.Image)
    assert (ours.mode, ours.size) == (theirs.mode, theirs.size)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("x", [RGB, RGBA, GRAY, np.zeros((4, 5, 3), "float32"), RGB[:, :, :1] * 1000],
                         ids=["rgb", "rgba", "gray", "constant", "gray-wide"])
@pytest.mark.parametrize("scale", [True, False])
def test_array_to_img_is_keras_s(x, scale):
    _same_image(utils.array_to_img(x, scale=scale), keras.utils.array_to_img(x, scale=scale))


def test_array_to_img_modes_channels_first_and_dtype():
    assert utils.array_to_img(RGB).mode == "RGB" and utils.array_to_img(RGB).size == (21, 13)
    assert utils.array_to_img(RGBA).mode == "RGBA" and utils.array_to_img(GRAY).mode == "L"
    assert utils.array_to_img(GRAY * 1000, scale=False).mode == "I"
    first = np.transpose(RGB, (2, 0, 1))
    _same_image(utils.array_to_img(first, data_format="channels_first"),
                keras.utils.array_to_img(first, data_format="channels_first"))
    _same_image(utils.array_to_img(first, data_format="CHANNELS_FIRST"), utils.array_to_img(RGB))
    pixels = RNG.integers(0, 256, size=(6, 7, 3)).astype("float64")
    _same_image(utils.array_to_img(pixels, scale=False, dtype="float64"),
                keras.utils.array_to_img(pixels, scale=False, dtype="float64"))
    np.testing.assert_array_equal(np.asarray(utils.array_to_img(pixels, scale=False)), pixels.astype("uint8"))
    # Keras's in-place division fails for an integer dtype; here it scales as the float array does.
    ints = pixels.astype("int64")
    _same_image(utils.array_to_img(ints, dtype="int64"), keras.utils.array_to_img(pixels, dtype="float64"))


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("x", [RGB, RGBA, GRAY], ids=["rgb", "rgba", "gray"])
def test_img_to_array_round_trips_as_keras_s(x, data_format):
    img = keras.utils.array_to_img(x)
    ours = utils.img_to_array(img, data_format=data_format)
    theirs = keras.utils.img_to_array(img, data_format=data_format)
    assert ours.dtype == theirs.dtype == np.float32 and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    back = utils.array_to_img(ours, data_format=data_format, scale=False)
    _same_image(back, img)
    assert utils.img_to_array(img, dtype="uint8").dtype == np.uint8


def _save_both(tmp_path, name, x, **kwargs):
    ours, theirs = tmp_path / f"ours_{name}", tmp_path / f"keras_{name}"
    utils.save_img(ours, x, **kwargs)
    keras.utils.save_img(theirs, x, **kwargs)
    return ours, theirs


@pytest.mark.parametrize("name,x", [("rgb.png", RGB), ("rgba.png", RGBA), ("gray.png", GRAY), ("rgb.jpg", RGB),
                                    ("gray.jpeg", GRAY), ("rgb.bmp", RGB)])
def test_save_img_writes_keras_s_files(tmp_path, name, x):
    ours, theirs = _save_both(tmp_path, name, x)
    assert ours.read_bytes() == theirs.read_bytes()
    for color_mode in ("rgb", "rgba", "grayscale"):
        _same_image(utils.load_img(ours, color_mode=color_mode), keras.utils.load_img(theirs, color_mode=color_mode))


def test_rgba_as_jpeg_is_converted_with_a_warning_as_in_keras(tmp_path):
    with pytest.warns(UserWarning, match="JPEG format does not support RGBA"):
        utils.save_img(tmp_path / "ours.JPG", RGBA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        keras.utils.save_img(tmp_path / "keras.jpg", RGBA)
    assert (tmp_path / "ours.JPG").read_bytes() == (tmp_path / "keras.jpg").read_bytes()
    assert Image.open(tmp_path / "ours.JPG").mode == "RGB"
    buffer = io.BytesIO()
    with pytest.warns(UserWarning, match="converting to RGB"):
        utils.save_img(buffer, RGBA, file_format="JPEG", quality=95)
    assert Image.open(io.BytesIO(buffer.getvalue())).format == "JPEG"
    with open(tmp_path / "named.jpg", "wb") as f, pytest.warns(UserWarning, match="converting to RGB"):
        utils.save_img(f, RGBA)  # the format comes from the file object's name
    assert (tmp_path / "named.jpg").read_bytes() == (tmp_path / "keras.jpg").read_bytes()


def test_save_img_to_a_file_object_and_its_options(tmp_path):
    buffer = io.BytesIO()
    utils.save_img(buffer, RGB, file_format="png")
    utils.save_img(tmp_path / "keras.png", RGB)
    assert buffer.getvalue() == (tmp_path / "keras.png").read_bytes()
    utils.save_img(tmp_path / "unscaled.png", RGBA * 255, scale=False)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "unscaled.png")), (RGBA * 255).astype("uint8"))
    with open(tmp_path / "named.png", "wb") as f:  # a file object with a name: the format comes from it
        utils.save_img(f, RGB)
    assert (tmp_path / "named.png").read_bytes() == buffer.getvalue()
    utils.save_img(str(tmp_path / "first.png"), np.transpose(RGB, (2, 0, 1)), data_format="channels_first")
    assert (tmp_path / "first.png").read_bytes() == buffer.getvalue()


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("keep_aspect_ratio", [False, True])
@pytest.mark.parametrize("target_size", [(8, 8), (20, 9), (13, 12), (10, 20), (13, 21)])
def test_load_img_resizes_as_keras(tmp_path, interpolation, keep_aspect_ratio, target_size):
    path = tmp_path / "rgb.png"
    keras.utils.save_img(path, RGB)
    kwargs = dict(target_size=target_size, interpolation=interpolation, keep_aspect_ratio=keep_aspect_ratio)
    ours, theirs = utils.load_img(path, **kwargs), keras.utils.load_img(path, **kwargs)
    assert ours.size == (target_size[1], target_size[0])
    _same_image(ours, theirs)
    np.testing.assert_array_equal(utils.img_to_array(ours), keras.utils.img_to_array(theirs))


def test_load_img_reads_paths_and_file_objects(tmp_path):
    path = tmp_path / "gray.png"
    keras.utils.save_img(path, GRAY)
    expected = keras.utils.load_img(path, color_mode="grayscale")
    _same_image(utils.load_img(str(path), color_mode="grayscale"), expected)
    _same_image(utils.load_img(bytes(path), color_mode="grayscale"), expected)
    _same_image(utils.load_img(io.BytesIO(path.read_bytes()), color_mode="grayscale"), expected)
    with open(path, "rb") as f:
        img = utils.load_img(f, color_mode="grayscale")
    _same_image(img, expected)  # read in full before the file closed
    assert utils.load_img(path).mode == "RGB" and utils.load_img(path, color_mode="rgba").mode == "RGBA"
    wide = tmp_path / "wide.png"  # a 16-bit grayscale image stays 16-bit, as in Keras
    Image.fromarray(np.arange(35, dtype="uint16").reshape(5, 7) * 1000).save(wide)
    _same_image(utils.load_img(wide, color_mode="grayscale"), keras.utils.load_img(wide, color_mode="grayscale"))


def test_bad_input_is_named(tmp_path):
    with pytest.raises(ValueError, match="rank 3"):
        utils.array_to_img(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="channel number: 2"):
        utils.array_to_img(np.zeros((4, 4, 2)))
    with pytest.raises(ValueError, match=r"channel number: 5 .*shape \(5, 4, 3\)"):
        utils.array_to_img(np.zeros((5, 4, 3)), data_format="channels_first")
    with pytest.raises(ValueError, match="data_format"):
        utils.array_to_img(RGB, data_format="channels_middle")
    with pytest.raises(ValueError, match="data_format"):
        utils.img_to_array(RGB, data_format="nhwc")
    with pytest.raises(ValueError, match="Unsupported image shape"):
        utils.img_to_array(np.zeros((2, 3, 4, 5)))
    path = tmp_path / "rgb.png"
    utils.save_img(path, RGB)
    with pytest.raises(ValueError, match="color_mode"):
        utils.load_img(path, color_mode="cmyk")
    with pytest.raises(ValueError, match="Invalid interpolation method 'trilinear'"):
        utils.load_img(path, target_size=(4, 4), interpolation="trilinear")
    for size in [(4,), (4, 0), (4.5, 4), 7]:
        with pytest.raises(ValueError, match="target_size"):
            utils.load_img(path, target_size=size)
    with pytest.raises(TypeError, match="path should be path-like"):
        utils.load_img(12)
    with pytest.raises(ValueError, match="file_format"):
        utils.save_img(io.BytesIO(), RGB)
    with pytest.raises(ValueError, match="no extension"):
        utils.save_img(tmp_path / "noext", RGB)
    assert not (tmp_path / "noext").exists()


def test_missing_pillow_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_pillow(name, *args, **kwargs):
        if name == "PIL" or name.startswith("PIL."):
            raise ImportError("No module named 'PIL'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pillow)
    for call in (lambda: utils.array_to_img(RGB), lambda: utils.load_img(pathlib.Path("any.png"))):
        with pytest.raises(ImportError, match=r'pip install "kgraph-engine\[images\]"'):
            call()
