"""Character-level recurrent sequence-to-sequence model (keras-io examples/nlp/lstm_seq2seq.py): one-hot
character tensors, an LSTM encoder (return_state) whose states start an LSTM decoder (return_sequences,
return_state, initial_state), a softmax Dense, trained with rmsprop; saved to s2s_model.keras, loaded, and
split into the example's inference models (model.input[0], model.layers[2].output, new Inputs for the states,
the decoder layers called again) for greedy decoding."""
import keras
import numpy as np

PAIRS = [("Go.", "Va !"), ("Hi.", "Salut !"), ("Run!", "Cours !"), ("Wow!", "Ça alors !"), ("Fire!", "Au feu !"),
         ("Help!", "À l'aide !"), ("Stop!", "Arrête-toi !"), ("Wait!", "Attends !"), ("Hello!", "Bonjour !"),
         ("I see.", "Je comprends."), ("I try.", "J'essaye."), ("I won!", "J'ai gagné !"), ("Oh no!", "Oh non !"),
         ("Relax.", "Calme-toi."), ("Smile.", "Souriez !"), ("Attack!", "Attaque !"), ("Get up.", "Lève-toi."),
         ("Got it!", "Compris !"), ("He ran.", "Il a couru."), ("Hop in.", "Montez."), ("Hug me.", "Serre-moi !"),
         ("I fell.", "Je suis tombé."), ("I know.", "Je sais."), ("I left.", "Je suis parti."),
         ("I lied.", "J'ai menti."), ("I lost.", "J'ai perdu."), ("I'm 19.", "J'ai 19 ans."),
         ("I'm OK.", "Je vais bien."), ("Listen.", "Écoutez !"),
         ("No way!", "Pas question !"), ("Really?", "Vrai ?"), ("Thanks.", "Merci !")]

latent_dim = 256  # Latent dimensionality of the encoding space.


def make_inference_models(model):
    encoder_inputs = model.input[0]  # input_1
    encoder_outputs, state_h_enc, state_c_enc = model.layers[2].output  # lstm_1
    encoder_states = [state_h_enc, state_c_enc]
    encoder_model = keras.Model(encoder_inputs, encoder_states)

    decoder_inputs = model.input[1]  # input_2
    decoder_state_input_h = keras.Input(shape=(latent_dim,))
    decoder_state_input_c = keras.Input(shape=(latent_dim,))
    decoder_states_inputs = [decoder_state_input_h, decoder_state_input_c]
    decoder_lstm = model.layers[3]
    decoder_outputs, state_h_dec, state_c_dec = decoder_lstm(decoder_inputs, initial_state=decoder_states_inputs)
    decoder_states = [state_h_dec, state_c_dec]
    decoder_dense = model.layers[4]
    decoder_outputs = decoder_dense(decoder_outputs)
    decoder_model = keras.Model([decoder_inputs] + decoder_states_inputs, [decoder_outputs] + decoder_states)
    return encoder_model, decoder_model


def main():
    keras.utils.set_random_seed(1337)

    batch_size = 64  # Batch size for training.
    epochs = 1  # Number of epochs to train for.

    # Vectorize the data.
    input_texts = []
    target_texts = []
    input_characters = set()
    target_characters = set()
    for input_text, target_text in PAIRS:
        # We use "tab" as the "start sequence" character
        # for the targets, and "\n" as "end sequence" character.
        target_text = "\t" + target_text + "\n"
        input_texts.append(input_text)
        target_texts.append(target_text)
        for char in input_text:
            if char not in input_characters:
                input_characters.add(char)
        for char in target_text:
            if char not in target_characters:
                target_characters.add(char)

    input_characters = sorted(list(input_characters))
    target_characters = sorted(list(target_characters))
    num_encoder_tokens = len(input_characters)
    num_decoder_tokens = len(target_characters)
    max_encoder_seq_length = max([len(txt) for txt in input_texts])
    max_decoder_seq_length = max([len(txt) for txt in target_texts])

    input_token_index = dict([(char, i) for i, char in enumerate(input_characters)])
    target_token_index = dict([(char, i) for i, char in enumerate(target_characters)])

    encoder_input_data = np.zeros((len(input_texts), max_encoder_seq_length, num_encoder_tokens), dtype="float32")
    decoder_input_data = np.zeros((len(input_texts), max_decoder_seq_length, num_decoder_tokens), dtype="float32")
    decoder_target_data = np.zeros((len(input_texts), max_decoder_seq_length, num_decoder_tokens), dtype="float32")

    for i, (input_text, target_text) in enumerate(zip(input_texts, target_texts)):
        for t, char in enumerate(input_text):
            encoder_input_data[i, t, input_token_index[char]] = 1.0
        encoder_input_data[i, t + 1 :, input_token_index[" "]] = 1.0
        for t, char in enumerate(target_text):
            # decoder_target_data is ahead of decoder_input_data by one timestep
            decoder_input_data[i, t, target_token_index[char]] = 1.0
            if t > 0:
                # decoder_target_data will be ahead by one timestep
                # and will not include the start character.
                decoder_target_data[i, t - 1, target_token_index[char]] = 1.0
        decoder_input_data[i, t + 1 :, target_token_index[" "]] = 1.0
        decoder_target_data[i, t:, target_token_index[" "]] = 1.0

    # Define an input sequence and process it.
    encoder_inputs = keras.Input(shape=(None, num_encoder_tokens))
    encoder = keras.layers.LSTM(latent_dim, return_state=True)
    encoder_outputs, state_h, state_c = encoder(encoder_inputs)

    # We discard `encoder_outputs` and only keep the states.
    encoder_states = [state_h, state_c]

    # Set up the decoder, using `encoder_states` as initial state.
    decoder_inputs = keras.Input(shape=(None, num_decoder_tokens))

    # We set up our decoder to return full output sequences,
    # and to return internal states as well. We don't use the
    # return states in the training model, but we will use them in inference.
    decoder_lstm = keras.layers.LSTM(latent_dim, return_sequences=True, return_state=True)
    decoder_outputs, _, _ = decoder_lstm(decoder_inputs, initial_state=encoder_states)
    decoder_dense = keras.layers.Dense(num_decoder_tokens, activation="softmax")
    decoder_outputs = decoder_dense(decoder_outputs)

    # Define the model that will turn
    # `encoder_input_data` & `decoder_input_data` into `decoder_target_data`
    model = keras.Model([encoder_inputs, decoder_inputs], decoder_outputs)

    model.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(
        [encoder_input_data, decoder_input_data],
        decoder_target_data,
        batch_size=batch_size,
        epochs=epochs,
        validation_split=0.2,
        verbose=0,
    )
    # Save model
    model.save("s2s_model.keras")

    # Define sampling models
    # Restore the model and construct the encoder and decoder.
    model = keras.models.load_model("s2s_model.keras")

    # Reverse-lookup token index to decode sequences back to
    # something readable.
    reverse_target_char_index = dict((i, char) for char, i in target_token_index.items())

    def decode_sequence(input_seq, encoder_model, decoder_model):
        # Encode the input as state vectors.
        states_value = encoder_model.predict(input_seq, verbose=0)

        # Generate empty target sequence of length 1.
        target_seq = np.zeros((1, 1, num_decoder_tokens))
        # Populate the first character of target sequence with the start character.
        target_seq[0, 0, target_token_index["\t"]] = 1.0

        # Sampling loop for a batch of sequences
        # (to simplify, here we assume a batch of size 1).
        stop_condition = False
        decoded_sentence = ""
        while not stop_condition:
            output_tokens, h, c = decoder_model.predict([target_seq] + states_value, verbose=0)

            # Sample a token
            sampled_token_index = np.argmax(output_tokens[0, -1, :])
            sampled_char = reverse_target_char_index[sampled_token_index]
            decoded_sentence += sampled_char

            # Exit condition: either hit max length
            # or find stop character.
            if sampled_char == "\n" or len(decoded_sentence) > max_decoder_seq_length:
                stop_condition = True

            # Update the target sequence (of length 1).
            target_seq = np.zeros((1, 1, num_decoder_tokens))
            target_seq[0, 0, sampled_token_index] = 1.0

            # Update states
            states_value = [h, c]
        return decoded_sentence

    encoder_model, decoder_model = make_inference_models(model)
    decoded = decode_sequence(encoder_input_data[0:1], encoder_model, decoder_model)
    print("Input sentence:", input_texts[0])
    print("Decoded sentence:", decoded)

    def probe(model):
        encoder_model, decoder_model = make_inference_models(model)
        states = encoder_model.predict(encoder_input_data[:4], verbose=0)
        step = decoder_model.predict([decoder_input_data[:4, :1]] + states, verbose=0)
        return {"states": states, "step": step,
                "decoded": [decode_sequence(encoder_input_data[i : i + 1], encoder_model, decoder_model)
                            for i in range(2)]}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict([encoder_input_data[:2], decoder_input_data[:2]], verbose=0),
        "inputs": [encoder_input_data[:8], decoder_input_data[:8]],
        "evaluate": ([encoder_input_data, decoder_input_data], decoder_target_data),
        "probe": probe,
        "values": {"layers": [type(layer).__name__ for layer in model.layers],
                   "tokens": [num_encoder_tokens, num_decoder_tokens]},
    }


if __name__ == "__main__":
    print(main())
