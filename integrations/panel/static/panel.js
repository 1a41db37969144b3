// Draws the workflow's PROV graph with Cytoscape.js (shipped beside this file), in PROV's
// usual shapes and colours: entities yellow ellipses, activities blue rectangles, agents
// orange pentagons ("houses").
(function () {
  "use strict";
  var box = document.getElementById("prov");
  var data = document.getElementById("prov-data");
  if (!box || !data || typeof cytoscape === "undefined") { return; }
  var elements = JSON.parse(data.textContent);
  var cy = cytoscape({
    container: box,
    elements: elements,
    wheelSensitivity: 0.3,
    style: [
      { selector: "node", style: {
          "label": "data(label)", "font-size": 9, "text-valign": "center", "text-halign": "center",
          "text-wrap": "ellipsis", "text-max-width": 90, "width": 96, "height": 34,
          "border-width": 1, "border-color": "#555" } },
      { selector: "node[kind = 'entity']", style: { "shape": "ellipse", "background-color": "#fffc87" } },
      { selector: "node[kind = 'activity']", style: { "shape": "rectangle", "background-color": "#9fb1fc" } },
      { selector: "node[kind = 'agent']", style: {
          "shape": "polygon", "shape-polygon-points": "-1 -0.2 0 -1 1 -0.2 1 1 -1 1",
          "background-color": "#fed37f", "height": 44 } },
      { selector: "edge", style: {
          "width": 1, "line-color": "#8a94a6", "target-arrow-color": "#8a94a6",
          "target-arrow-shape": "triangle", "curve-style": "bezier", "arrow-scale": 0.8,
          "label": "data(label)", "font-size": 7, "color": "#5a6476", "text-rotation": "autorotate" } },
      { selector: ":selected", style: { "border-width": 3, "border-color": "#d14" } }
    ],
    layout: { name: "breadthfirst", directed: true, spacingFactor: 1.1, animate: false }
  });
  cy.on("tap", "node", function (event) {
    var node = event.target;
    box.setAttribute("title", node.data("title") || node.id());
  });
  box.setAttribute("data-drawn", String(cy.nodes().length));
}());
