"""Knowledge Distillation (keras-io examples/vision/knowledge_distillation.py, its Keras 3 form): a Distiller
Model subclass holding a teacher and a student that overrides compile (extra arguments: student and
distillation losses, alpha, temperature), compute_loss(x, y, y_pred, sample_weight, allow_empty) (the
teacher's forward pass inside it, KLDivergence of the temperature-softened softmaxes scaled by T**2) and
call (the student), so that fit and evaluate run Keras's own train and test steps on that loss; a teacher
trained first with compile/fit/evaluate, a student from keras.models.clone_model trained from scratch for
comparison, all on MNIST-shaped digits with sparse labels.
The example's TensorFlow form overrode train_step (tf.GradientTape) and test_step; its Keras 3 form, written
here, has none, so this program exercises the default steps with an overridden compute_loss whose
signature has `allow_empty` and no `training`."""
import keras
import numpy as np
from keras import layers, ops


class Distiller(keras.Model):
    def __init__(self, student, teacher):
        super().__init__()
        self.teacher = teacher
        self.student = student

    def compile(
        self,
        optimizer,
        metrics,
        student_loss_fn,
        distillation_loss_fn,
        alpha=0.1,
        temperature=3,
    ):
        """Configure the distiller.

        Args:
            optimizer: Keras optimizer for the student weights
            metrics: Keras metrics for evaluation
            student_loss_fn: Loss function of difference between student
                predictions and ground-truth
            distillation_loss_fn: Loss function of difference between soft
                student predictions and soft teacher predictions
            alpha: weight to student_loss_fn and 1-alpha to distillation_loss_fn
            temperature: Temperature for softening probability distributions.
                Larger temperature gives softer distributions.
        """
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False
    ):
        teacher_pred = self.teacher(x, training=False)
        student_loss = self.student_loss_fn(y, y_pred)

        distillation_loss = self.distillation_loss_fn(
            ops.softmax(teacher_pred / self.temperature, axis=1),
            ops.softmax(y_pred / self.temperature, axis=1),
        ) * (self.temperature**2)

        loss = self.alpha * student_loss + (1 - self.alpha) * distillation_loss
        return loss

    def call(self, x):
        return self.student(x)


def build_models():
    # Create the teacher
    teacher = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            layers.Conv2D(256, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
            layers.Conv2D(512, (3, 3), strides=(2, 2), padding="same"),
            layers.Flatten(),
            layers.Dense(10),
        ],
        name="teacher",
    )

    # Create the student
    student = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
            layers.Conv2D(32, (3, 3), strides=(2, 2), padding="same"),
            layers.Flatten(),
            layers.Dense(10),
        ],
        name="student",
    )
    return teacher, student


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(46)

    teacher, student = build_models()

    # Clone student for later comparison
    student_scratch = keras.models.clone_model(student)

    # Stands in for keras.datasets.mnist.load_data().
    x_train = rng.integers(0, 256, size=(32, 28, 28), dtype=np.uint8)
    y_train = rng.integers(0, 10, size=(32,), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(16, 28, 28), dtype=np.uint8)
    y_test = rng.integers(0, 10, size=(16,), dtype=np.uint8)

    # Normalize data
    x_train = x_train.astype("float32") / 255.0
    x_train = np.reshape(x_train, (-1, 28, 28, 1))

    x_test = x_test.astype("float32") / 255.0
    x_test = np.reshape(x_test, (-1, 28, 28, 1))

    # Train teacher as usual
    teacher.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )

    # Train and evaluate teacher on data.
    teacher.fit(x_train, y_train, epochs=1, batch_size=16, verbose=0)
    teacher_evaluated = teacher.evaluate(x_test, y_test, verbose=0)

    # Initialize and compile distiller
    distiller = Distiller(student=student, teacher=teacher)
    distiller.compile(
        optimizer=keras.optimizers.Adam(),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        distillation_loss_fn=keras.losses.KLDivergence(),
        alpha=0.1,
        temperature=10,
    )

    # Distill teacher to student
    history = distiller.fit(x_train, y_train, epochs=1, batch_size=16, verbose=0)

    # Evaluate student on test dataset
    distiller_evaluated = distiller.evaluate(x_test, y_test, verbose=0)

    # Train student as done usually
    student_scratch.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )

    # Train and evaluate student trained from scratch.
    scratch_history = student_scratch.fit(x_train, y_train, epochs=1, batch_size=16, verbose=0)
    student_scratch.evaluate(x_test, y_test, verbose=0)

    def probe(model):
        return {"student": model.student.predict(x_test[:4], verbose=0),
                "teacher": model.teacher.predict(x_test[:4], verbose=0),
                "distillation_loss": model.compute_loss(x_test[:8], y_test[:8], model(x_test[:8]))}

    return {
        "model": distiller,
        "saved_model": student,
        "loss": history.history["loss"][-1],
        "inputs": x_test[:8],
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {"history_keys": sorted(history.history), "scratch_keys": sorted(scratch_history.history),
                   "evaluated_lens": [len(teacher_evaluated), len(distiller_evaluated)],
                   "scratch_is_a_copy": [student_scratch.name != student.name,
                                         len(student_scratch.weights) == len(student.weights)]},
    }


if __name__ == "__main__":
    print(main())
