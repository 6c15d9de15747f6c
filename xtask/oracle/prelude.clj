;; Stubs of PTC-Lisp extensions so conformance cases can use them in real Clojure.
;; Each stub gives the documented PTC-Lisp meaning in plain Clojure.
(defn sum [coll] (reduce + 0 coll))
(defn avg [coll] (when (seq coll) (/ (double (reduce + 0 coll)) (count coll))))
(defn sum-by [k coll] (reduce + 0 (keep k coll)))
(defn avg-by [k coll] (let [xs (keep k coll)] (when (seq xs) (/ (double (reduce + 0 xs)) (count xs)))))
(defn min-by [k coll] (let [xs (filter #(some? (k %)) coll)] (when (seq xs) (apply min-key k (reverse xs)))))
(defn max-by [k coll] (let [xs (filter #(some? (k %)) coll)] (when (seq xs) (apply max-key k (reverse xs)))))
(defn distinct-by [k coll] (second (reduce (fn [[seen out] x] (let [v (k x)] (if (contains? seen v) [seen out] [(conj seen v) (conj out x)]))) [#{} []] coll)))
(defn zip [a b] (map vector a b))
(defn upcase [s] (clojure.string/upper-case s))
(defn downcase [s] (clojure.string/lower-case s))
(defn combinations [coll n]
  (cond (zero? n) '(())
        (empty? coll) '()
        :else (concat (map #(cons (first coll) %) (combinations (rest coll) (dec n)))
                      (combinations (rest coll) n))))
(defn entries [m] (seq m))
(defn regex? [x] (instance? java.util.regex.Pattern x))
