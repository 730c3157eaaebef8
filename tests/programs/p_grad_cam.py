"""Grad-CAM class activation heatmaps (keras-io examples/vision/grad_cam.py): keras.applications.Xception,
its last layer's softmax removed by setting `model.layers[-1].activation = None`, a functional model mapping the
input to the activations of the last conv layer ("block14_sepconv2_act") and to the predictions, the gradient
of the top predicted class (or a chosen class) with respect to those activations on `keras.GradientTape`,
channel weights pooled from it and the heatmap normalized between 0 and 1.
As the example writes it, with `keras.GradientTape` for `tf.GradientTape` and keras.ops for tf.argmax,
tf.reduce_mean, tf.squeeze, tf.maximum and tf.math.reduce_max (`[..., None]` for `tf.newaxis`,
`keras.ops.convert_to_numpy` for `.numpy()`). Smaller: `weights=None` instead of "imagenet" (no download), 10
classes, 71x71 images (Xception's smallest input) instead of 299x299, and two random images in the [0, 255]
range instead of the elephant and cat-and-dog pictures (so no `decode_predictions`, whose class names are an
ImageNet download, and no superimposed JPEG, which needs matplotlib). No training, as in the example. The probe
runs `make_gradcam_heatmap` for the top class and for a chosen class on the model after the weight copy, and
the grad model's two outputs scaled to a maximum of 1. Keras cannot save this model (its Dense.get_config
serializes the activation, and keras.activations.serialize(None) raises), so nothing is exported."""
import keras
import numpy as np
from keras import ops

model_builder = keras.applications.xception.Xception
img_size = (71, 71)  # the example's (299, 299)
preprocess_input = keras.applications.xception.preprocess_input

last_conv_layer_name = "block14_sepconv2_act"


def get_img_array(rng, size):
    # Stands in for keras.utils.load_img + img_to_array: a float32 array of shape (71, 71, 3) in [0, 255].
    array = rng.integers(0, 256, size=(*size, 3)).astype("float32")
    # We add a dimension to transform our array into a "batch"
    # of size (1, 71, 71, 3)
    array = np.expand_dims(array, axis=0)
    return array


def make_gradcam_heatmap(img_array, model, last_conv_layer_name, pred_index=None):
    # First, we create a model that maps the input image to the activations
    # of the last conv layer as well as the output predictions
    grad_model = keras.models.Model(
        model.input, [model.get_layer(last_conv_layer_name).output, model.output]
    )

    # Then, we compute the gradient of the top predicted class for our input image
    # with respect to the activations of the last conv layer
    with keras.GradientTape() as tape:
        last_conv_layer_output, preds = grad_model(img_array)
        if pred_index is None:
            pred_index = ops.argmax(preds[0])
        class_channel = preds[:, pred_index]

    # This is the gradient of the output neuron (top predicted or chosen)
    # with regard to the output feature map of the last conv layer
    grads = tape.gradient(class_channel, last_conv_layer_output)

    # This is a vector where each entry is the mean intensity of the gradient
    # over a specific feature map channel
    pooled_grads = ops.mean(grads, axis=(0, 1, 2))

    # We multiply each channel in the feature map array
    # by "how important this channel is" with regard to the top predicted class
    # then sum all the channels to obtain the heatmap class activation
    last_conv_layer_output = last_conv_layer_output[0]
    heatmap = last_conv_layer_output @ pooled_grads[..., None]
    heatmap = ops.squeeze(heatmap)

    # For visualization purpose, we will also normalize the heatmap between 0 & 1
    heatmap = ops.maximum(heatmap, 0) / ops.max(heatmap)
    return ops.convert_to_numpy(heatmap), ops.convert_to_numpy(pooled_grads)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(7)

    # Prepare images
    img_array = preprocess_input(get_img_array(rng, size=img_size))
    img_array_2 = preprocess_input(get_img_array(rng, size=img_size))

    # Make model
    model = model_builder(weights=None, input_shape=(*img_size, 3), classes=10)

    # Remove last layer's softmax
    model.layers[-1].activation = None

    # Print what the top predicted class is
    preds = model.predict(img_array, verbose=0)
    print("Predicted:", int(np.argmax(preds[0])))

    # Generate class activation heatmap
    heatmap, _ = make_gradcam_heatmap(img_array, model, last_conv_layer_name)
    print(heatmap.shape)

    def probe(m):
        top, top_pooled = make_gradcam_heatmap(img_array, m, last_conv_layer_name)
        chosen, chosen_pooled = make_gradcam_heatmap(img_array_2, m, last_conv_layer_name, pred_index=3)
        # A randomly initialized Xception's logits and features are small (~1e-5): scaled to a maximum of 1,
        # they are compared at the tolerance's full precision.
        grad_model = keras.models.Model(m.input, [m.get_layer(last_conv_layer_name).output, m.output])
        features, logits = (ops.convert_to_numpy(t) for t in grad_model(img_array_2))
        return {"heatmap_top": top, "pooled_grads_top": top_pooled,
                "heatmap_class_3": chosen, "pooled_grads_class_3": chosen_pooled,
                "last_conv_scaled": features / np.max(np.abs(features)),
                "logits_scaled": logits / np.max(np.abs(logits))}

    return {
        "model": model,
        "loss": None,
        "inputs": np.concatenate([img_array, img_array_2]),
        "probe": probe,
        # Keras's Dense.get_config() serializes its activation with keras.activations.serialize, which raises
        # on the None the example sets, so real Keras cannot save this model either.
        "save": "the example sets the last Dense layer's activation to None, which Keras's get_config cannot "
                "serialize (keras.activations.serialize(None) raises)",
        "values": {"heatmap_shape": list(heatmap.shape), "num_layers": len(model.layers),
                   "last_conv_output_shape": list(model.get_layer(last_conv_layer_name).output.shape[1:])},
    }


if __name__ == "__main__":
    print(main())
