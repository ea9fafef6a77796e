//! Traversal over a compressed-sparse-row adjacency: breadth-first search and spreading activation.

/// Undirected adjacency in compressed sparse rows: the neighbours of node `n` are
/// `targets[offsets[n]..offsets[n + 1]]`, with the matching edge weights.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Csr {
    /// Row starts, one per node plus the end.
    pub offsets: Vec<u32>,
    /// Neighbour node ids.
    pub targets: Vec<u32>,
    /// Edge weights, parallel to `targets`.
    pub weights: Vec<f32>,
}

impl Csr {
    /// Build from undirected edges `(a, b, weight)` over `nodes` nodes; parallel edges are summed.
    pub fn build(nodes: usize, edges: impl Iterator<Item = (u32, u32, f32)> + Clone) -> Csr {
        let mut degree = vec![0u32; nodes + 1];
        for (a, b, _) in edges.clone() {
            if (a as usize) < nodes && (b as usize) < nodes && a != b {
                degree[a as usize] += 1;
                degree[b as usize] += 1;
            }
        }
        let mut offsets = vec![0u32; nodes + 1];
        for n in 0..nodes {
            offsets[n + 1] = offsets[n] + degree[n];
        }
        let total = offsets[nodes] as usize;
        let mut targets = vec![0u32; total];
        let mut weights = vec![0f32; total];
        let mut fill: Vec<u32> = offsets[..nodes].to_vec();
        for (a, b, w) in edges {
            if (a as usize) < nodes && (b as usize) < nodes && a != b {
                for (x, y) in [(a, b), (b, a)] {
                    let at = fill[x as usize] as usize;
                    targets[at] = y;
                    weights[at] = w;
                    fill[x as usize] += 1;
                }
            }
        }
        Csr {
            offsets,
            targets,
            weights,
        }
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Neighbours of `n` with edge weights (empty for an unknown node).
    pub fn neighbours(&self, n: u32) -> (&[u32], &[f32]) {
        let n = n as usize;
        if n + 1 >= self.offsets.len() {
            return (&[], &[]);
        }
        let (s, e) = (self.offsets[n] as usize, self.offsets[n + 1] as usize);
        (&self.targets[s..e], &self.weights[s..e])
    }

    /// Nodes within `max_hops` of `start` (excluding it) with their hop counts, nearest first.
    pub fn bfs(&self, start: u32, max_hops: u32) -> Vec<(u32, u32)> {
        let n = self.nodes();
        if start as usize >= n {
            return Vec::new();
        }
        let mut seen = vec![false; n];
        seen[start as usize] = true;
        let mut out: Vec<(u32, u32)> = Vec::new();
        // The first frontier is the start node itself, kept outside `out`.
        let mut frontier: Vec<u32> = vec![start];
        for hop in 1..=max_hops {
            let before = out.len();
            for &node in &frontier {
                let (ts, _) = self.neighbours(node);
                for &t in ts {
                    if !seen[t as usize] {
                        seen[t as usize] = true;
                        out.push((t, hop));
                    }
                }
            }
            if out.len() == before {
                break;
            }
            frontier.clear();
            frontier.extend(out[before..].iter().map(|x| x.0));
        }
        out
    }

    /// Spreading activation from weighted seeds: each step, every active node passes `decay` × its activation
    /// to its neighbours in proportion to edge weight. Returns nodes (seeds excluded) whose activation reaches
    /// `threshold`, highest first.
    pub fn spread(
        &self,
        seeds: &[(u32, f32)],
        steps: u32,
        decay: f32,
        threshold: f32,
    ) -> Vec<(u32, f32)> {
        let n = self.nodes();
        let mut act = vec![0f32; n];
        let mut frontier: Vec<(u32, f32)> = Vec::new();
        for &(s, a) in seeds {
            if (s as usize) < n {
                act[s as usize] += a;
                frontier.push((s, a));
            }
        }
        for _ in 0..steps {
            let mut next: Vec<(u32, f32)> = Vec::new();
            for &(node, a) in &frontier {
                let (ts, ws) = self.neighbours(node);
                let total: f32 = ws.iter().sum();
                if total <= 0.0 {
                    continue;
                }
                for (&t, &w) in ts.iter().zip(ws) {
                    let pass = a * decay * w / total;
                    if pass >= threshold * 0.1 {
                        act[t as usize] += pass;
                        next.push((t, pass));
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        let mut out: Vec<(u32, f32)> = act
            .iter()
            .enumerate()
            .filter(|(i, &a)| a >= threshold && !seeds.iter().any(|s| s.0 as usize == *i))
            .map(|(i, &a)| (i as u32, a))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain() -> Csr {
        // 0 - 1 - 2 - 3, and 0 - 4
        let edges = vec![(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0), (0, 4, 3.0)];
        Csr::build(5, edges.into_iter())
    }

    #[test]
    fn bfs_hops() {
        let g = chain();
        assert_eq!(g.bfs(0, 1), vec![(1, 1), (4, 1)]);
        assert_eq!(g.bfs(0, 2), vec![(1, 1), (4, 1), (2, 2)]);
        assert_eq!(g.bfs(0, 10).len(), 4);
        assert!(g.bfs(99, 2).is_empty());
    }

    #[test]
    fn activation_follows_weights() {
        let g = chain();
        let a = g.spread(&[(0, 1.0)], 2, 0.5, 0.01);
        assert_eq!(a[0].0, 4, "heavier edge gets more activation");
        assert!(a.iter().all(|x| x.0 != 0));
        assert!(!a.iter().any(|x| x.0 == 3), "3 is three hops away");
    }
}
