"""Random augmentation layers of images, and the policies built from them."""
