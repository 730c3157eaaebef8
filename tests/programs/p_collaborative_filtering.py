"""Collaborative Filtering for Movie Recommendations (keras-io
examples/structured_data/collaborative_filtering_movielens.py, its Keras 3 form): a subclassed RecommenderNet
(keras.Model) with user and movie Embeddings (he_normal, an l2(1e-6) embeddings_regularizer) and per-user and
per-movie bias Embeddings, called on (user, movie) index pairs sliced with inputs[:, 0] and inputs[:, 1], a
match score from ops.tensordot(user_vector, movie_vector, 2), ops.nn.sigmoid, trained with
BinaryCrossentropy on ratings normalized to [0, 1], then the top-10 recommendations for one user.
As the example writes it, ops.tensordot(..., 2) contracts both axes, batch included: the score is one scalar
per batch, added to every row's biases, so a prediction depends on the other rows of its batch (predict and
evaluate batch the same way in both runs, so the comparison holds).
Smaller: 20 users, 30 movies, EMBEDDING_SIZE 8 instead of 50, 90 ratings, one epoch. The MovieLens CSV read
with pandas is replaced by NumPy arrays of the same columns (userId, movieId with gaps, ratings 0.5 to 5.0 in
steps of 0.5) and the same preprocessing (encoding the ids to indices, shuffling, normalizing the ratings,
a 90/10 split); the loss plot is left out. The probe gives the recommendation step: the predicted ratings of
the movies a user has not watched, the indices of the top 10, and the regularization losses. RecommenderNet
defines no get_config(), so the model is not saved (Keras 3.15 raises NotImplementedError on saving it)."""
import keras
import numpy as np
from keras import layers, ops

EMBEDDING_SIZE = 8  # the example's 50


class RecommenderNet(keras.Model):
    def __init__(self, num_users, num_movies, embedding_size, **kwargs):
        super().__init__(**kwargs)
        self.num_users = num_users
        self.num_movies = num_movies
        self.embedding_size = embedding_size
        self.user_embedding = layers.Embedding(
            num_users,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(1e-6),
        )
        self.user_bias = layers.Embedding(num_users, 1)
        self.movie_embedding = layers.Embedding(
            num_movies,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(1e-6),
        )
        self.movie_bias = layers.Embedding(num_movies, 1)

    def call(self, inputs):
        user_vector = self.user_embedding(inputs[:, 0])
        user_bias = self.user_bias(inputs[:, 0])
        movie_vector = self.movie_embedding(inputs[:, 1])
        movie_bias = self.movie_bias(inputs[:, 1])
        dot_user_movie = ops.tensordot(user_vector, movie_vector, 2)
        # Add all the components (including bias)
        x = dot_user_movie + user_bias + movie_bias
        # The sigmoid activation forces the rating to between 0 and 1
        return ops.nn.sigmoid(x)


def read_ratings(rng, n):
    """Stands in for pd.read_csv(ratings_file): the userId, movieId and rating columns of n ratings."""
    user_pool = rng.choice(np.arange(1, 100), size=20, replace=False)
    movie_pool = rng.choice(np.arange(1, 500), size=30, replace=False)
    pairs = rng.choice(len(user_pool) * len(movie_pool), size=n, replace=False)
    return {"userId": user_pool[pairs // len(movie_pool)],
            "movieId": movie_pool[pairs % len(movie_pool)],
            "rating": rng.integers(1, 11, size=n) * 0.5}


def encode(df):
    """The example's preprocessing: users and movies encoded as indices, the ratings as float32."""
    user_ids = list(dict.fromkeys(df["userId"].tolist()))  # df["userId"].unique().tolist()
    user2user_encoded = {x: i for i, x in enumerate(user_ids)}
    movie_ids = list(dict.fromkeys(df["movieId"].tolist()))
    movie2movie_encoded = {x: i for i, x in enumerate(movie_ids)}
    movie_encoded2movie = {i: x for i, x in enumerate(movie_ids)}
    df["user"] = np.array([user2user_encoded[u] for u in df["userId"]])
    df["movie"] = np.array([movie2movie_encoded[m] for m in df["movieId"]])

    num_users = len(user2user_encoded)
    num_movies = len(movie_encoded2movie)
    df["rating"] = df["rating"].astype(np.float32)
    # min and max ratings will be used to normalize the ratings later
    min_rating = min(df["rating"])
    max_rating = max(df["rating"])
    print(
        "Number of users: {}, Number of Movies: {}, Min rating: {}, Max rating: {}".format(
            num_users, num_movies, min_rating, max_rating
        )
    )

    return df, user2user_encoded, movie2movie_encoded, movie_encoded2movie, min_rating, max_rating


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(81)
    df = read_ratings(rng, 90)

    df, user2user_encoded, movie2movie_encoded, movie_encoded2movie, min_rating, max_rating = encode(df)
    num_users = len(user2user_encoded)
    num_movies = len(movie_encoded2movie)
    movie_ids = list(movie2movie_encoded)

    order = np.random.default_rng(42).permutation(len(df["rating"]))  # df.sample(frac=1, random_state=42)
    df = {k: v[order] for k, v in df.items()}
    x = np.stack([df["user"], df["movie"]], axis=1)
    # Normalize the targets between 0 and 1. Makes it easy to train.
    y = (df["rating"] - min_rating) / (max_rating - min_rating)
    # Assuming training on 90% of the data and validating on 10%.
    train_indices = int(0.9 * len(y))
    x_train, x_val, y_train, y_val = (
        x[:train_indices],
        x[train_indices:],
        y[:train_indices],
        y[train_indices:],
    )

    model = RecommenderNet(num_users, num_movies, EMBEDDING_SIZE)
    model.compile(
        loss=keras.losses.BinaryCrossentropy(),
        optimizer=keras.optimizers.Adam(learning_rate=0.001),
    )
    history = model.fit(
        x=x_train,
        y=y_train,
        batch_size=64,
        epochs=1,
        verbose=0,
        validation_data=(x_val, y_val),
    )

    # Let us get a user and see the top recommendations.
    user_id = df["userId"][0]
    movies_watched_by_user = df["movieId"][df["userId"] == user_id]
    movies_not_watched = [m for m in movie_ids if m not in set(movies_watched_by_user.tolist())]
    movies_not_watched = [[movie2movie_encoded.get(x)] for x in movies_not_watched]
    user_encoder = user2user_encoded.get(user_id)
    user_movie_array = np.hstack(
        ([[user_encoder]] * len(movies_not_watched), movies_not_watched)
    )

    def probe(model):
        ratings = model.predict(user_movie_array, verbose=0).flatten()
        top_ratings_indices = ratings.argsort()[-10:][::-1]
        recommended_movie_ids = [
            movie_encoded2movie.get(movies_not_watched[x][0]) for x in top_ratings_indices
        ]
        model(x_val)
        return {"ratings": ratings, "recommended_movie_ids": np.array(recommended_movie_ids),
                # the l2(1e-6) penalties over their factor (the sums of squares), so the comparison sees them
                "regularization": [ops.convert_to_numpy(loss) / 1e-6 for loss in model.losses]}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "inputs": x_val,
        "evaluate": (x_val, y_val),
        "probe": probe,
        "save": "the example's RecommenderNet defines no get_config(), so Keras cannot save it "
                "(NotImplementedError from Model.get_config)",
        "values": {"history_keys": sorted(history.history), "x_head": x[:4], "y_head": y[:4],
                   "user_movie_array": user_movie_array,
                   "weights": [list(w.shape) for w in model.get_weights()]},
    }


if __name__ == "__main__":
    print(main())
