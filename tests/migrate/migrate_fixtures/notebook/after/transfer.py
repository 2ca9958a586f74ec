#!/usr/bin/env python
# coding: utf-8

# # Transfer learning: clone, then experiment
# Exported from `transfer.ipynb` with `jupyter nbconvert --to script`.

# In[1]:


import os
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np
from keras import Input, Model, layers
from compat_clone import clone_model
get_ipython().run_line_magic('matplotlib', 'inline')


# In[2]:


inputs = Input((5,))
features = layers.Dense(4, name="features")(inputs)
model = Model(inputs, layers.Dense(2, name="logits")(features))
model.summary()


# In[3]:


# a twin to experiment on, with the same weights
twin = clone_model(model, copy_weights=True)
twin.summary()


# In[4]:


# a different head: clone_function swaps the last layer
def swap_head(layer):
    if layer.name == "logits":
        return layers.Dense(3, name="logits3")
    return layer.__class__.from_config(layer.get_config())

wide = clone_model(model, clone_function=swap_head)
wide.output_shape


# In[ ]:




