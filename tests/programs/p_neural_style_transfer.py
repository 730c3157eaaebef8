"""Neural style transfer (keras-io examples/generative/neural_style_transfer.py): a VGG19 feature extractor
whose outputs are a dict of every layer's activations by name, a content loss on block5_conv2, a style loss on
the Gram matrices of block1..5_conv1, a total variation loss on the combination image, and gradient descent on
the combination image itself (a Variable) with SGD on an ExponentialDecay schedule.
As the example writes it for TensorFlow, with `keras.GradientTape` for `tf.GradientTape`, keras.ops for tf.*
(tf.transpose, tf.reshape, tf.matmul, tf.concat, tf.reduce_sum, tf.pow) and `keras.Variable` for `tf.Variable`;
no `tf.function`. Smaller: VGG19 with `weights=None` instead of ImageNet weights, 32x32 images drawn at random
for the downloaded photographs (loaded with `load_img`), 2 iterations instead of 4000, no image saving. The
extractor takes it as an argument where the example reads a global. The probe computes the loss and its
gradient with respect to a fixed combination image, the Gram matrix of a style layer and one SGD step from a
fresh optimizer, after the weight copy."""
import keras
import numpy as np
from keras import ops
from keras.applications import vgg19

# Weights of the different loss components
total_variation_weight = 1e-6
style_weight = 1e-6
content_weight = 2.5e-8

# Dimensions of the generated picture (the example's 400 rows, its width scaled by the photograph's ratio).
img_nrows = 32
img_ncols = 32


def preprocess_image(img):
    # The example opens and resizes a file with load_img, a new image each time; here `img` is the picture as an
    # array, copied: Keras's img_to_array keeps a float32 array and preprocess_input then shifts it in place.
    img = keras.utils.img_to_array(np.copy(img))
    img = np.expand_dims(img, axis=0)
    img = vgg19.preprocess_input(img)
    return ops.convert_to_tensor(img)


def deprocess_image(x):
    # Util function to convert a tensor into a valid image
    x = x.reshape((img_nrows, img_ncols, 3))
    # Remove zero-center by mean pixel
    x[:, :, 0] += 103.939
    x[:, :, 1] += 116.779
    x[:, :, 2] += 123.68
    # 'BGR'->'RGB'
    x = x[:, :, ::-1]
    x = np.clip(x, 0, 255).astype("uint8")
    return x


# The gram matrix of an image tensor (feature-wise outer product)
def gram_matrix(x):
    x = ops.transpose(x, (2, 0, 1))
    features = ops.reshape(x, (ops.shape(x)[0], -1))
    gram = ops.matmul(features, ops.transpose(features))
    return gram


def style_loss(style, combination):
    S = gram_matrix(style)
    C = gram_matrix(combination)
    channels = 3
    size = img_nrows * img_ncols
    return ops.sum(ops.square(S - C)) / (4.0 * (channels**2) * (size**2))


def content_loss(base, combination):
    return ops.sum(ops.square(combination - base))


def total_variation_loss(x):
    a = ops.square(
        x[:, : img_nrows - 1, : img_ncols - 1, :] - x[:, 1:, : img_ncols - 1, :]
    )
    b = ops.square(
        x[:, : img_nrows - 1, : img_ncols - 1, :] - x[:, : img_nrows - 1, 1:, :]
    )
    return ops.sum(ops.power(a + b, 1.25))


# List of layers to use for the style loss.
style_layer_names = [
    "block1_conv1",
    "block2_conv1",
    "block3_conv1",
    "block4_conv1",
    "block5_conv1",
]
# The layer to use for the content loss.
content_layer_name = "block5_conv2"


def compute_loss(feature_extractor, combination_image, base_image, style_reference_image):
    input_tensor = ops.concatenate(
        [base_image, style_reference_image, combination_image], axis=0
    )
    features = feature_extractor(input_tensor)

    # Initialize the loss
    loss = ops.zeros(shape=())

    # Add content loss
    layer_features = features[content_layer_name]
    base_image_features = layer_features[0, :, :, :]
    combination_features = layer_features[2, :, :, :]
    loss = loss + content_weight * content_loss(
        base_image_features, combination_features
    )
    # Add style loss
    for layer_name in style_layer_names:
        layer_features = features[layer_name]
        style_reference_features = layer_features[1, :, :, :]
        combination_features = layer_features[2, :, :, :]
        sl = style_loss(style_reference_features, combination_features)
        loss += (style_weight / len(style_layer_names)) * sl

    # Add total variation loss
    loss += total_variation_weight * total_variation_loss(combination_image)
    return loss


def compute_loss_and_grads(feature_extractor, combination_image, base_image, style_reference_image):
    with keras.GradientTape() as tape:
        loss = compute_loss(feature_extractor, combination_image, base_image, style_reference_image)
    grads = tape.gradient(loss, combination_image)
    return loss, grads


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(51)
    # Stand in for the two downloaded photographs (Paris, The Starry Night).
    base_picture = rng.integers(0, 256, size=(img_nrows, img_ncols, 3)).astype("float32")
    style_picture = rng.integers(0, 256, size=(img_nrows, img_ncols, 3)).astype("float32")

    # Build a VGG19 model (the example loads ImageNet weights)
    model = vgg19.VGG19(weights=None, include_top=False)

    # Get the symbolic outputs of each "key" layer (we gave them unique names).
    outputs_dict = dict([(layer.name, layer.output) for layer in model.layers])

    # Set up a model that returns the activation values for every layer in
    # VGG19 (as a dict).
    feature_extractor = keras.Model(inputs=model.inputs, outputs=outputs_dict)

    optimizer = keras.optimizers.SGD(
        keras.optimizers.schedules.ExponentialDecay(
            initial_learning_rate=100.0, decay_steps=100, decay_rate=0.96
        )
    )

    base_image = preprocess_image(base_picture)
    style_reference_image = preprocess_image(style_picture)
    combination_image = keras.Variable(preprocess_image(base_picture))

    iterations = 2
    for i in range(1, iterations + 1):
        loss, grads = compute_loss_and_grads(
            feature_extractor, combination_image, base_image, style_reference_image
        )
        optimizer.apply_gradients([(grads, combination_image)])
        print("Iteration %d: loss=%.2f" % (i, float(loss)))
    img = deprocess_image(ops.convert_to_numpy(combination_image).copy())

    fixed = np.random.default_rng(52).normal(scale=20.0, size=(1, img_nrows, img_ncols, 3)).astype("float32")
    base_np = ops.convert_to_numpy(base_image)
    style_np = ops.convert_to_numpy(style_reference_image)

    def probe(extractor):
        comb = keras.Variable(base_np + fixed)
        loss, grads = compute_loss_and_grads(extractor, comb, ops.convert_to_tensor(base_np),
                                             ops.convert_to_tensor(style_np))
        sgd = keras.optimizers.SGD(keras.optimizers.schedules.ExponentialDecay(
            initial_learning_rate=100.0, decay_steps=100, decay_rate=0.96))
        sgd.apply_gradients([(grads, comb)])
        feats = extractor(ops.convert_to_tensor(style_np))
        return {"loss": loss, "grads": grads, "stepped": comb.value,
                "gram": gram_matrix(feats["block2_conv1"][0]),
                "tv": total_variation_loss(ops.convert_to_tensor(base_np + fixed))}

    return {
        "model": feature_extractor,
        "loss": float(loss),
        "inputs": base_np + fixed,
        "probe": probe,
        "values": {"preprocessed": base_np, "deprocessed_shape": np.array(img.shape),
                   "output_names": sorted(outputs_dict), "learning_rate": optimizer.learning_rate,
                   "iterations": optimizer.iterations},
    }


if __name__ == "__main__":
    print(main())
