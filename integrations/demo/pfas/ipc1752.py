"""Read IPC-1752A Full Material Declarations (Class D) into an ingredient list.

The parts of the IPC-1752A v2 layout used here::

    MainDoc
    └── Product
        ├── ProductID itemName=... itemNumber=...   (with an Amount)
        ├── SubProduct ...                           (nested the same way, any depth)
        └── HomogeneousMaterialList
            └── HomogeneousMaterial name=...
                ├── Amount value=... UOM=...
                └── Substance name=...
                    ├── SubstanceID authority="CAS" identity="..."
                    └── Amount value=... UOM=...

Element names are matched without their namespace, so v1.1 and v2.0 files both read. A
substance's concentration is its mass percent in its homogeneous material: an explicit
``massPercent`` (attribute, or ``MassPercent`` element) when present, else its ``Amount``
divided by the material's ``Amount``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

_MATERIAL_TAGS = {"HomogeneousMaterial", "HomogenousMaterial", "Material"}
_GRAMS_PER_UNIT = {"kg": 1000.0, "g": 1.0, "mg": 1e-3, "ug": 1e-6, "µg": 1e-6, "μg": 1e-6}


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(element: ET.Element, name: str) -> list[ET.Element]:
    return [child for child in element if _local(child.tag) == name]


def parse_ipc1752a(data: bytes, label: str) -> tuple[str | None, list[dict[str, Any]]]:
    """Parse an IPC-1752A declaration.

    Args:
        data: The XML document's bytes.
        label: The file name used in error messages.

    Returns:
        The product name (``ProductID/@itemName``, else ``@itemNumber``) and one ingredient per
        substance per homogeneous material, in document order: ``{"name", "cas",
        "concentration", "material"}``.

    Raises:
        ValueError: Not well-formed XML, not an IPC-1752A ``MainDoc``, or no substances.
    """
    try:
        # The standard library parser does not fetch external entities, and expat limits
        # entity expansion, so untrusted declarations are safe to read here.
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise ValueError(f"{label}: not well-formed XML ({exc})") from exc
    if _local(root.tag) != "MainDoc":
        raise ValueError(
            f"{label}: not an IPC-1752A declaration (root element is <{_local(root.tag)}>, "
            "expected <MainDoc>)"
        )
    products = _children(root, "Product")
    if not products:
        raise ValueError(f"{label}: the IPC-1752A declaration has no <Product> element")
    product_name = _product_name(products[0])
    ingredients = [item for product in products for item in _walk(product)]
    if not ingredients:
        raise ValueError(f"{label}: the declaration lists no <Substance> in a homogeneous material")
    return product_name, ingredients


def _product_name(product: ET.Element) -> str | None:
    for pid in _children(product, "ProductID"):
        return pid.get("itemName") or pid.get("itemNumber")
    return None


def _walk(element: ET.Element) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for child in element:
        if _local(child.tag) in _MATERIAL_TAGS:
            items.extend(_material(child))
        else:
            items.extend(_walk(child))
    return items


def _material(material: ET.Element) -> list[dict[str, Any]]:
    name = material.get("name") or "unnamed material"
    material_grams = _grams(_first(material, "Amount"))
    items = []
    for substance in _children(material, "Substance"):
        cas_ids = [
            sid.get("identity")
            for sid in _children(substance, "SubstanceID")
            if (sid.get("authority") or "").upper() == "CAS"
        ]
        items.append(
            {
                "name": substance.get("name") or "unnamed substance",
                "cas": cas_ids[0] if cas_ids else None,
                "concentration": _concentration(substance, material_grams),
                "material": name,
            }
        )
    return items


def _first(element: ET.Element, name: str) -> ET.Element | None:
    found = _children(element, name)
    return found[0] if found else None


def _grams(amount: ET.Element | None) -> float | None:
    if amount is None:
        return None
    unit = (amount.get("UOM") or "").strip()
    try:
        value = float(amount.get("value", ""))
    except ValueError:
        return None
    factor = _GRAMS_PER_UNIT.get(unit) or _GRAMS_PER_UNIT.get(unit.lower())
    return value * factor if factor else None


def _concentration(substance: ET.Element, material_grams: float | None) -> str | None:
    amount = _first(substance, "Amount")
    percent_element = _first(substance, "MassPercent")
    explicit = (
        substance.get("massPercent")
        or (amount.get("massPercent") if amount is not None else None)
        or (
            percent_element.get("value") or percent_element.text
            if percent_element is not None
            else None
        )
    )
    if amount is not None and (amount.get("UOM") or "").strip() == "%":
        explicit = explicit or amount.get("value")
    if explicit:
        try:
            return _format_percent(float(explicit))
        except ValueError:
            return None
    grams = _grams(amount)
    if grams is None or not material_grams:
        return None
    return _format_percent(100.0 * grams / material_grams)


def _format_percent(value: float) -> str:
    return f"{value:.4g} %"
