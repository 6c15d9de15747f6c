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
;; math extensions: integer results for floats; NaN and infinities pass through
(defn- special? [d] (or (Double/isNaN d) (Double/isInfinite d)))
(defn- to-long-or-same [d] (if (< (Math/abs d) 9.2E18) (long d) d))
(defn floor [x] (if (integer? x) x (let [d (double x)] (if (special? d) d (to-long-or-same (Math/floor d))))))
(defn ceil [x] (if (integer? x) x (let [d (double x)] (if (special? d) d (to-long-or-same (Math/ceil d))))))
(defn trunc [x] (if (integer? x) x (let [d (double x)] (if (special? d) d (to-long-or-same d)))))
(defn round
  ([x] (if (integer? x) x (let [d (double x)] (if (special? d) d (Math/round d)))))
  ([x n] (if (and (integer? x) (>= n 0)) x
           (let [d (double x)]
             (if (special? d) d
                 (.doubleValue (.setScale (bigdec d) (int n) (if (neg? d) java.math.RoundingMode/HALF_DOWN java.math.RoundingMode/HALF_UP))))))))
(defn pow [x y] (Math/pow (double x) (double y)))
(defn sqrt [x] (Math/sqrt (double x)))
;; extract: group n (default 1, or 0 without groups) of the first match; string patterns are regexes
(defn extract
  ([pat s] (extract pat s nil))
  ([pat s n] (when (string? s)
               (let [m (re-matcher (if (string? pat) (re-pattern pat) pat) s)]
                 (when (.find m)
                   (let [n (or n (if (pos? (.groupCount m)) 1 0))]
                     (when (<= 0 n (.groupCount m)) (.group m (int n)))))))))
(defn extract-int
  ([pat s] (extract-int pat s nil nil))
  ([pat s n] (extract-int pat s n nil))
  ([pat s n default] (or (some-> (extract pat s n) clojure.string/trim parse-long) default)))
(defn re-split [re s] (vec (.split (if (string? re) (re-pattern re) re) s -1)))
;; json/ (cheshire-like names over clojure.data.json): string keys, nil on failure
(create-ns 'json)
(intern 'json 'parse-string
  (fn ([s] (when (string? s) (try (clojure.data.json/read-str s) (catch Exception _ nil))))
      ([s k] (when (string? s)
               (try (clojure.data.json/read-str s :key-fn (cond (true? k) keyword (fn? k) k :else identity))
                    (catch Exception _ nil))))))
(intern 'json 'generate-string
  (fn [v] (try (clojure.data.json/write-str v :escape-slash false :escape-unicode false) (catch Exception _ nil))))
(intern 'json 'parse-lines
  (fn [s] (vec (for [l (clojure.string/split-lines s) :when (not (clojure.string/blank? l))]
                 (try (clojure.data.json/read-str l) (catch Exception _ nil))))))
