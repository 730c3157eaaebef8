"""Integrated Gradients (keras-io examples/vision/integrated_gradients.py): the gradients of the top predicted
class with respect to an input image on `keras.GradientTape` (`tape.watch` on the image), the same for images
interpolated between a baseline and the input, preprocessed with the application's `preprocess_input`, the
integral approximated with the trapezoidal rule, and integrated gradients averaged over random baselines.
As the example writes it, with `keras.GradientTape` for `tf.GradientTape`, `import keras` for
`from tensorflow import keras`, and keras.ops for tf.cast, tf.expand_dims, tf.argmax and tf.reduce_mean;
`keras.ops.stack` for `tf.convert_to_tensor` of a list of tensors (torch's `as_tensor` refuses a list of
multi-element tensors, so Keras 3 on torch cannot convert one), and `ops.multiply` for the NumPy
difference `(img_input - baseline)` times a tensor (a NumPy array times a torch tensor raises a TypeError). Smaller: keras.applications.MobileNetV2
(alpha=0.35, 10 classes, `weights=None`) on 32x32 images instead of Xception with ImageNet weights on 299x299,
8 interpolation steps instead of 50, and a random image in [0, 255] instead of the elephant picture (so no
`decode_predictions`). The GradVisualizer (matplotlib and scipy.ndimage plots of NumPy results) is left out.
No training, as in the example. The probe recomputes the gradients and the integrated gradients (fixed
baselines) on the model after the weight copy."""
import keras
import numpy as np
from keras import ops
from keras.applications import mobilenet_v2

# Size of the input image
img_size = (32, 32, 3)  # the example's (299, 299, 3)
NUM_STEPS = 8  # the example's 50

model = None


def get_img_array(rng, size=(32, 32)):
    # Stands in for keras.utils.load_img + img_to_array: a float32 array of shape (32, 32, 3) in [0, 255].
    array = rng.integers(0, 256, size=(*size, 3)).astype("float32")
    # We add a dimension to transform our array into a "batch"
    # of size (1, 32, 32, 3)
    array = np.expand_dims(array, axis=0)
    return array


def get_gradients(img_input, top_pred_idx):
    """Computes the gradients of outputs w.r.t input image."""
    images = ops.cast(img_input, "float32")

    with keras.GradientTape() as tape:
        tape.watch(images)
        preds = model(images)
        top_class = preds[:, top_pred_idx]

    grads = tape.gradient(top_class, images)
    return grads


def get_integrated_gradients(img_input, top_pred_idx, baseline=None, num_steps=NUM_STEPS):
    """Computes Integrated Gradients for a predicted label."""
    # If baseline is not provided, start with a black image
    # having same size as the input image.
    if baseline is None:
        baseline = np.zeros(img_size).astype(np.float32)
    else:
        baseline = baseline.astype(np.float32)

    # 1. Do interpolation.
    img_input = img_input.astype(np.float32)
    interpolated_image = [
        baseline + (step / num_steps) * (img_input - baseline)
        for step in range(num_steps + 1)
    ]
    interpolated_image = np.array(interpolated_image).astype(np.float32)

    # 2. Preprocess the interpolated images
    interpolated_image = mobilenet_v2.preprocess_input(interpolated_image)

    # 3. Get the gradients
    grads = []
    for i, img in enumerate(interpolated_image):
        img = ops.expand_dims(img, axis=0)
        grad = get_gradients(img, top_pred_idx=top_pred_idx)
        grads.append(grad[0])
    grads = ops.stack(grads)

    # 4. Approximate the integral using the trapezoidal rule
    grads = (grads[:-1] + grads[1:]) / 2.0
    avg_grads = ops.mean(grads, axis=0)

    # 5. Calculate integrated gradients and return
    integrated_grads = ops.multiply(img_input - baseline, avg_grads)
    return integrated_grads


def random_baseline_integrated_gradients(img_input, top_pred_idx, baselines, num_steps=NUM_STEPS):
    """Averaged integrated gradients over the given random baseline images (the example draws
    `np.random.random(img_size) * 255` for each of its `num_runs`)."""
    # 1. List to keep track of Integrated Gradients (IG) for all the images
    integrated_grads = []

    # 2. Get the integrated gradients for all the baselines
    for baseline in baselines:
        igrads = get_integrated_gradients(
            img_input=img_input,
            top_pred_idx=top_pred_idx,
            baseline=baseline,
            num_steps=num_steps,
        )
        integrated_grads.append(igrads)

    # 3. Return the average integrated gradients for the image
    integrated_grads = ops.stack(integrated_grads)
    return ops.mean(integrated_grads, axis=0)


def attributions(img):
    # 2. Keep a copy of the original image
    orig_img = np.copy(img[0]).astype(np.uint8)
    # 3. Preprocess the image
    img_processed = ops.cast(mobilenet_v2.preprocess_input(np.copy(img)), dtype="float32")
    # 4. Get model predictions
    preds = model.predict(img_processed, verbose=0)
    top_pred_idx = int(ops.argmax(preds[0]))
    # 5. Get the gradients of the last layer for the predicted label
    grads = get_gradients(img_processed, top_pred_idx=top_pred_idx)
    # 6. Get the integrated gradients
    baselines = [np.random.default_rng(seed).random(img_size) * 255 for seed in (1, 2)]
    igrads = random_baseline_integrated_gradients(np.copy(orig_img), top_pred_idx=top_pred_idx,
                                                  baselines=baselines)
    black = get_integrated_gradients(np.copy(orig_img).astype(np.float32), top_pred_idx=top_pred_idx)
    return {"top_pred_idx": np.int64(top_pred_idx), "grads": ops.convert_to_numpy(grads[0]),
            "integrated_gradients": ops.convert_to_numpy(igrads),
            "integrated_gradients_black_baseline": ops.convert_to_numpy(black)}


def main():
    global model
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(11)

    # Load a small MobileNetV2 (the example's Xception with imagenet weights)
    model = mobilenet_v2.MobileNetV2(weights=None, input_shape=img_size, alpha=0.35, classes=10)

    # 1. Convert the image to numpy array
    img = get_img_array(rng)
    trained = model
    result = attributions(img)
    print("Predicted:", result["top_pred_idx"], result["integrated_gradients"].shape)

    def probe(m):
        global model
        model = m
        try:
            return attributions(img)
        finally:
            model = trained

    return {
        "model": trained,
        "loss": None,
        "inputs": mobilenet_v2.preprocess_input(np.copy(img)),
        "probe": probe,
        "values": {"integrated_gradients_shape": list(result["integrated_gradients"].shape),
                   "preprocessed_corners": mobilenet_v2.preprocess_input(np.copy(img))[0, ::31, ::31]},
    }


if __name__ == "__main__":
    print(main())
