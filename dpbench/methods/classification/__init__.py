"""Classifiers with a linear decision function (no intercept): public logistic
regression, objective perturbation (ObjPert) and DP-SGD."""
