"""Deep Dream (keras-io examples/generative/deep_dream.py): an InceptionV3 feature extractor whose outputs are
a dict of the activations of mixed4..mixed7, a loss that sums their squared non-border activations with the
example's coefficients, and gradient ascent on the input image itself with normalized gradients, over octaves
of growing size with the detail lost at each upscaling put back.
As the example writes it for TensorFlow, with `keras.GradientTape` for `tf.GradientTape`, keras.ops for tf.*
(tf.maximum, tf.reduce_mean, tf.reduce_prod, tf.cast, tf.shape) and `ops.image.resize` for `tf.image.resize`
(both bilinear without antialiasing); no `tf.function`. Smaller: InceptionV3 with `weights=None` instead of
ImageNet weights, a 107x107 random picture for the downloaded photograph, 2 octaves (76x76, just above
InceptionV3's minimum input of 75x75, then 107x107) of 1 ascent step each instead of 3 octaves of 20, no image saving. At these sizes
mixed4..mixed7 are 3x3 maps, so the example's border crop `[:, 2:-2, 2:-2, :]` leaves nothing: the crop is
`[:, 1:-1, 1:-1, :]` here. The ascent step's `img += learning_rate * grads` is `img = img + ...`: on torch the
watched image is a leaf that requires grad, which refuses an in-place update. The probe computes one ascent
step (loss, new image, the normalized gradient) on a fixed image after the weight copy, and the features
scaled by their largest value (with random weights they are ~1e-7, far below the comparison's tolerance)."""
import keras
import numpy as np
from keras import ops
from keras.applications import inception_v3

# These are the names of the layers
# for which we try to maximize activation,
# as well as their weight in the final loss
# we try to maximize.
layer_settings = {
    "mixed4": 1.0,
    "mixed5": 1.5,
    "mixed6": 2.0,
    "mixed7": 2.5,
}

step = 0.01  # Gradient ascent step size
num_octave = 2  # Number of scales at which to run gradient ascent (the example's 3)
octave_scale = 1.4  # Size ratio between scales
iterations = 1  # Number of ascent steps per scale (the example's 20)
max_loss = 15.0


def preprocess_image(img):
    # The example opens a file with load_img; here `img` is the picture as an array already.
    img = keras.utils.img_to_array(img)
    img = np.expand_dims(img, axis=0)
    img = inception_v3.preprocess_input(img)
    return img


def deprocess_image(x):
    # Util function to convert a NumPy array into a valid image.
    x = x.reshape((x.shape[1], x.shape[2], 3))
    # Undo inception v3 preprocessing
    x /= 2.0
    x += 0.5
    x *= 255.0
    # Convert to uint8 and clip to the valid range [0, 255]
    x = np.clip(x, 0, 255).astype("uint8")
    return x


def compute_loss(feature_extractor, input_image):
    features = feature_extractor(input_image)
    # Initialize the loss
    loss = ops.zeros(shape=())
    for name in features.keys():
        coeff = layer_settings[name]
        activation = features[name]
        # We avoid border artifacts by only involving non-border pixels in the loss.
        scaling = ops.prod(ops.cast(ops.shape(activation), "float32"))
        loss += coeff * ops.sum(ops.square(activation[:, 1:-1, 1:-1, :])) / scaling
    return loss


def gradient_ascent_step(feature_extractor, img, learning_rate):
    with keras.GradientTape() as tape:
        tape.watch(img)
        loss = compute_loss(feature_extractor, img)
    # Compute gradients.
    grads = tape.gradient(loss, img)
    # Normalize gradients.
    grads /= ops.maximum(ops.mean(ops.abs(grads)), 1e-6)
    img = img + learning_rate * grads  # the example's `img +=`: torch refuses it on a watched leaf
    return loss, img


def gradient_ascent_loop(feature_extractor, img, iterations, learning_rate, max_loss=None):
    losses = []
    for i in range(iterations):
        loss, img = gradient_ascent_step(feature_extractor, img, learning_rate)
        losses.append(float(loss))
        if max_loss is not None and loss > max_loss:
            break
        print("... Loss value at step %d: %.2f" % (i, loss))
    return img, losses


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(61)
    # Stands in for the downloaded photograph of the sky.
    picture = rng.integers(0, 256, size=(107, 107, 3)).astype("float32")

    # Build an InceptionV3 model (the example loads ImageNet weights)
    model = inception_v3.InceptionV3(weights=None, include_top=False)

    # Get the symbolic outputs of each "key" layer (we gave them unique names).
    outputs_dict = dict(
        [
            (layer.name, layer.output)
            for layer in [model.get_layer(name) for name in layer_settings.keys()]
        ]
    )

    # Set up a model that returns the activation values for every target layer
    # (as a dict)
    feature_extractor = keras.Model(inputs=model.inputs, outputs=outputs_dict)

    original_img = preprocess_image(picture)
    original_shape = original_img.shape[1:3]

    successive_shapes = [original_shape]
    for i in range(1, num_octave):
        shape = tuple([int(dim / (octave_scale**i)) for dim in original_shape])
        successive_shapes.append(shape)
    successive_shapes = successive_shapes[::-1]
    shrunk_original_img = ops.image.resize(original_img, successive_shapes[0])

    img = ops.convert_to_tensor(np.copy(original_img))  # Make a copy
    losses = []
    for i, shape in enumerate(successive_shapes):
        print("Processing octave %d with shape %s" % (i, shape))
        img = ops.image.resize(img, shape)
        img, octave_losses = gradient_ascent_loop(
            feature_extractor, img, iterations=iterations, learning_rate=step, max_loss=max_loss
        )
        losses += octave_losses
        upscaled_shrunk_original_img = ops.image.resize(shrunk_original_img, shape)
        same_size_original = ops.image.resize(original_img, shape)
        lost_detail = same_size_original - upscaled_shrunk_original_img

        img += lost_detail
        shrunk_original_img = ops.image.resize(original_img, shape)

    dream = deprocess_image(ops.convert_to_numpy(img).copy())

    fixed = np.random.default_rng(62).uniform(-1.0, 1.0, size=(1, 75, 75, 3)).astype("float32")

    def probe(extractor):
        loss, stepped = gradient_ascent_step(extractor, ops.convert_to_tensor(fixed), step)
        features = extractor.predict(fixed, verbose=0)
        return {"loss": loss, "stepped": stepped, "normalized_grads": (ops.convert_to_numpy(stepped) - fixed) / step,
                "scaled_loss": ops.convert_to_numpy(loss) / np.max(np.abs(features["mixed4"])) ** 2,
                "scaled_features": {k: v / np.max(np.abs(v)) for k, v in features.items()}}

    return {
        "model": feature_extractor,
        "loss": losses[-1],
        "inputs": fixed,
        "probe": probe,
        "values": {"successive_shapes": np.array(successive_shapes), "dream_shape": np.array(dream.shape),
                   "shrunk": shrunk_original_img, "lost_detail": lost_detail,
                   "output_names": sorted(outputs_dict)},
    }


if __name__ == "__main__":
    print(main())
