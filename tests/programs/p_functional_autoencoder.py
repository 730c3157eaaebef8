"""The Functional API (keras-io guides/functional_api.py), "Use the same graph of layers to define multiple
models", "All models are callable, just like layers" and ensembling: a convolutional encoder and decoder,
an autoencoder from the same layers, then encoder and decoder as models nested in an autoencoder."""
import keras
import numpy as np
from keras import layers


def get_model():
    inputs = keras.Input(shape=(128,))
    outputs = layers.Dense(1)(inputs)
    return keras.Model(inputs, outputs)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(1)

    encoder_input = keras.Input(shape=(28, 28, 1), name="img")
    x = layers.Conv2D(16, 3, activation="relu")(encoder_input)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.MaxPooling2D(3)(x)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.Conv2D(16, 3, activation="relu")(x)
    encoder_output = layers.GlobalMaxPooling2D()(x)

    encoder = keras.Model(encoder_input, encoder_output, name="encoder")
    encoder.summary()

    x = layers.Reshape((4, 4, 1))(encoder_output)
    x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
    x = layers.Conv2DTranspose(32, 3, activation="relu")(x)
    x = layers.UpSampling2D(3)(x)
    x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
    decoder_output = layers.Conv2DTranspose(1, 3, activation="relu")(x)

    autoencoder = keras.Model(encoder_input, decoder_output, name="autoencoder")
    autoencoder.summary()

    # Models as layers.
    encoder_input = keras.Input(shape=(28, 28, 1), name="original_img")
    x = layers.Conv2D(16, 3, activation="relu")(encoder_input)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.MaxPooling2D(3)(x)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.Conv2D(16, 3, activation="relu")(x)
    encoder_output = layers.GlobalMaxPooling2D()(x)
    encoder = keras.Model(encoder_input, encoder_output, name="encoder")

    decoder_input = keras.Input(shape=(16,), name="encoded_img")
    x = layers.Reshape((4, 4, 1))(decoder_input)
    x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
    x = layers.Conv2DTranspose(32, 3, activation="relu")(x)
    x = layers.UpSampling2D(3)(x)
    x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
    decoder_output = layers.Conv2DTranspose(1, 3, activation="relu")(x)
    decoder = keras.Model(decoder_input, decoder_output, name="decoder")

    autoencoder_input = keras.Input(shape=(28, 28, 1), name="img")
    encoded_img = encoder(autoencoder_input)
    decoded_img = decoder(encoded_img)
    autoencoder = keras.Model(autoencoder_input, decoded_img, name="autoencoder")
    autoencoder.summary()

    images = rng.random((24, 28, 28, 1)).astype("float32")
    autoencoder.compile(optimizer="adam", loss="mse")
    history = autoencoder.fit(images, images, batch_size=8, epochs=1, verbose=0)

    # Ensembling: several models averaged.
    model1 = get_model()
    model2 = get_model()
    model3 = get_model()
    inputs = keras.Input(shape=(128,))
    y1 = model1(inputs)
    y2 = model2(inputs)
    y3 = model3(inputs)
    outputs = layers.average([y1, y2, y3])
    ensemble_model = keras.Model(inputs=inputs, outputs=outputs)

    def probe(model):
        # The nested models, called on their own, give the parts of the whole.
        fixed = images[:4]
        enc = model.get_layer("encoder")
        dec = model.get_layer("decoder")
        codes = enc.predict(fixed, verbose=0)
        weights = np.random.default_rng(7).normal(size=(128, 1)).astype("float32") * 0.1
        for member in (model1, model2, model3):
            member.set_weights([weights, np.zeros((1,), "float32")])
        return {"codes": codes, "decoded": dec.predict(codes, verbose=0),
                "ensemble": ensemble_model.predict(np.ones((2, 128), "float32"), verbose=0)}

    return {
        "model": autoencoder,
        "loss": history.history["loss"][-1],
        "predictions": autoencoder.predict(images[:4], verbose=0),
        "inputs": images[:6],
        "evaluate": (images[:8], images[:8]),
        "probe": probe,
        "values": {
            "encoder_output_shape": list(encoder.output_shape),
            "autoencoder_layers": [layer.name for layer in autoencoder.layers],
            "ensemble_layers": len(ensemble_model.layers),
        },
    }


if __name__ == "__main__":
    print(main())
