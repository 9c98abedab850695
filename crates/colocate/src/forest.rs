//! A trained perpetual booster compiled for one-row prediction: its trees as dense node arrays
//! and its linear regression head, evaluated on a row slice.
//!
//! Why: perpetual keeps each tree's nodes in a hash map and builds a matrix and a vector per
//! tree for every `predict` call. Prediction inside placement's fixed point evaluates the memory
//! models millions of times, and hashing dominated its profile. The compiled form computes the
//! same sum (the unit test checks it against `predict`); a booster using categorical splits,
//! which these models never do, is not compiled and callers fall back to `predict`.

use perpetual::PerpetualBooster;
use std::collections::HashMap;

/// One node: a leaf's value, or a split and where each side (and a missing value) goes.
#[derive(Clone, Debug)]
enum Node {
    Leaf(f64),
    Split {
        feature: usize,
        value: f64,
        left: usize,
        right: usize,
        missing: usize,
    },
}

/// perpetual's linear companion to small regression fits, as its `predict` applies it.
#[derive(Clone, Debug)]
struct Head {
    means: Vec<f64>,
    scales: Vec<f64>,
    coefficients: Vec<f64>,
    intercept: f64,
    blend: f64,
}

/// The compiled booster.
#[derive(Clone, Debug)]
pub struct Forest {
    base: f64,
    missing: f64,
    trees: Vec<Vec<Node>>,
    head: Option<Head>,
}

impl Forest {
    /// Compiles `booster`; `None` if a tree uses a categorical split or is malformed.
    pub fn compile(booster: &PerpetualBooster) -> Option<Forest> {
        let mut trees = Vec::new();
        for tree in booster.get_prediction_trees() {
            let mut ids: Vec<usize> = tree.nodes.keys().copied().collect();
            ids.sort_unstable();
            let dense: HashMap<usize, usize> =
                ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
            // The walk starts at node 0, which must come first.
            if ids.first() != Some(&0) {
                return None;
            }
            let mut nodes = Vec::with_capacity(ids.len());
            for id in &ids {
                let node = tree.nodes.get(id)?;
                if node.is_leaf {
                    nodes.push(Node::Leaf(f64::from(node.weight_value)));
                    continue;
                }
                if node.left_cats.is_some() {
                    return None;
                }
                nodes.push(Node::Split {
                    feature: node.split_feature,
                    value: node.split_value,
                    left: *dense.get(&node.left_child)?,
                    right: *dense.get(&node.right_child)?,
                    missing: *dense.get(&node.missing_node)?,
                });
            }
            trees.push(nodes);
        }
        let head = booster.regression_head.as_ref().map(|h| Head {
            means: h.feature_means.clone(),
            scales: h.feature_scales.clone(),
            coefficients: h.coefficients.clone(),
            intercept: h.intercept,
            blend: h.blend_weight,
        });
        Some(Forest {
            base: booster.base_score,
            missing: booster.cfg.missing,
            trees,
            head,
        })
    }

    fn is_missing(&self, value: f64) -> bool {
        if self.missing.is_nan() {
            value.is_nan()
        } else {
            value == self.missing || value.is_nan()
        }
    }

    /// The booster's prediction for `row`.
    pub fn predict(&self, row: &[f64]) -> f64 {
        let mut sum = self.base;
        for tree in &self.trees {
            let mut index = 0usize;
            // A well-formed tree reaches a leaf in fewer steps than it has nodes.
            for _ in 0..tree.len() {
                match tree.get(index) {
                    Some(Node::Leaf(value)) => {
                        sum += value;
                        break;
                    }
                    Some(Node::Split {
                        feature,
                        value,
                        left,
                        right,
                        missing,
                    }) => {
                        let x = row.get(*feature).copied().unwrap_or(f64::NAN);
                        index = if self.is_missing(x) {
                            *missing
                        } else if x < *value {
                            *left
                        } else {
                            *right
                        };
                    }
                    None => break,
                }
            }
        }
        if let Some(head) = &self.head {
            let mut residual = head.intercept;
            for (column, x) in row.iter().enumerate() {
                let (Some(mean), Some(scale), Some(coefficient)) = (
                    head.means.get(column),
                    head.scales.get(column),
                    head.coefficients.get(column),
                ) else {
                    continue;
                };
                if x.is_finite() {
                    residual += coefficient * (x - mean) / scale;
                }
            }
            sum += head.blend * residual;
        }
        sum
    }
}
