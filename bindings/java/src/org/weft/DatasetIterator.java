package org.weft;

import java.util.List;

/**
 * The nodes {@link Dataset#iterator} added to a graph: {@code components},
 * the next element's components (outputs of one IteratorGetNext node), and
 * {@code init}, a target that starts the pass again ({@code null} when not
 * asked for).  Fetching the components advances the session's iterator of
 * that name by one element.
 */
public record DatasetIterator(List<Output> components, Node init) {
  /**
   * Component {@code index} of the next element.
   *
   * @param index which component, from 0
   * @return its output
   */
  public Output component(int index) {
    return components.get(index);
  }

  /**
   * The components as an array, for {@link Session#run}.
   *
   * @return every component's output, in order
   */
  public Output[] outputs() {
    return components.toArray(new Output[0]);
  }
}
